// tests/fuzz/fuzz_tokenize_decode.c: the shards ./tokenize decode reads (tools/tokenize.c's open_shard and
// decode_shard, through its main as tokenize_main), with a tokenizer of the 256 bytes and an end of
// text. A shard it accepts is an llm.c uint16 shard exactly: magic 20240520, version 1, as many
// tokens as its header says and no byte more, every token below 257. The text goes to /dev/null.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

int tokenize_main(int argc, char **argv);

static int32_t le32(const uint8_t *p) { return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24); }

void fuzz_one(const uint8_t *data, size_t size) {
    static uint8_t tok[1024 + 2 * 256 + 14];
    static int ready;
    if (!ready) {                                  // the tokenizer file, and stdout to /dev/null
        int32_t head[4] = { 20240328, 2, 257, 256 };
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 4; j++) tok[4 * k + j] = (uint8_t)((uint32_t)head[k] >> (8 * j));
        for (int i = 0; i < 256; i++) { tok[1024 + 2 * i] = 1; tok[1024 + 2 * i + 1] = (uint8_t)i; }
        tok[1024 + 512] = 13;
        memcpy(tok + 1024 + 513, "<|endoftext|>", 13);
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(null, 1) < 0) { perror("/dev/null"); _exit(2); }
        close(null);
        ready = 1;
    }
    char *argv[] = { "tokenize", "decode", "--tokenizer", (char *)fuzz_file(tok, sizeof tok), (char *)fuzz_file(data, size), NULL };
    tokenize_main(5, argv);
    FUZZ_ASSERT(size >= 1024 && le32(data) == 20240520 && le32(data + 4) == 1);
    int32_t n = le32(data + 8);
    FUZZ_ASSERT(n >= 0 && size == 1024 + 2 * (size_t)n);
    for (int32_t i = 0; i < n; i++) FUZZ_ASSERT((data[1024 + 2 * i] | data[1024 + 2 * i + 1] << 8) < 257);
}
