// formats/safetensors.h: a minimal reader and writer for the safetensors format.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
//   {"name":{"dtype":"F32","shape":[...],"data_offsets":[begin,end]}, ..., "__metadata__":{...}}
// then the data, contiguous, little-endian, C order. Only F32 and I32 are used here.
#ifndef SAFETENSORS_H
#define SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

enum { ST_F32 = 0, ST_I32 = 1 };
enum { ST_MAX_DIMS = 4 };

typedef struct {
    char *name;
    int dtype;                 // ST_F32 or ST_I32
    int ndim;                  // 0 for a scalar
    int64_t shape[ST_MAX_DIMS];
    size_t numel;
    void *data;                // float* or int32_t*, numel elements (owned by the file struct)
} StTensor;

// Writer: collect tensors, then write once. Data is copied at add time.
typedef struct {
    StTensor *t; int n, cap;
    char *metadata_json;       // the raw JSON object text for "__metadata__" (without braces
                               // handling: pass a full object like {"format":"pt"}), or NULL
} StWriter;

void st_writer_init(StWriter *w);
void st_add_f32(StWriter *w, const char *name, const float *data, int ndim, const int64_t *shape);
void st_add_i32(StWriter *w, const char *name, const int32_t *data, int ndim, const int64_t *shape);
// metadata: a JSON object text, e.g. {"format":"pt","config":"{...escaped...}"}
void st_set_metadata(StWriter *w, const char *json_object);
// Writes to path through path.tmp and rename(); exits via CHECK with a message on I/O failure.
void st_write(StWriter *w, const char *path);
void st_writer_free(StWriter *w);

// Reader: loads the whole file, checks the header (sizes, offsets in range and non-overlapping,
// known dtype) and exits via CHECK naming the file on any problem.
typedef struct {
    StTensor *t; int n;
    char *metadata_json;       // the "__metadata__" object text, or NULL
} StFile;

void st_read(const char *path, StFile *f);
const StTensor *st_find(const StFile *f, const char *name);   // NULL if absent
// The value of the __metadata__ entry `key` (a JSON string), decoded; NULL when there is none.
// The caller frees it. Exits naming path when the entry is not a string or is there twice.
char *st_metadata_string(const StFile *f, const char *key, const char *path);
// A JSON object whose members are strings, numbers or arrays of them, as "key=value\n" lines: a
// string decoded, a number as written, an array's items joined by ','. `part` names the text in
// messages (the file is path). Exits when the text is not such an object, or when a name or value
// could not be one line (a newline, '=' in a name, ',' in an array's string). The caller frees it.
char *st_json_lines(const char *json, const char *path, const char *part);
void st_file_free(StFile *f);

// JSON string escaping helper: appends the JSON-escaped form of s (without quotes) to buf.
// Returns the number of bytes that the escaped text needs (like snprintf).
size_t st_json_escape(char *buf, size_t cap, const char *s);

#endif
