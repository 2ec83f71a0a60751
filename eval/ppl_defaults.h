// eval/ppl_defaults.h: the perplexity evaluation's defaults (eval/perplexity.h), without the model:
// ./compare writes ./train's evaluation commands with them and links no model code.
#ifndef PPL_DEFAULTS_H
#define PPL_DEFAULTS_H

#define PPL_DEFAULT_TOKENS 65536     // default cap on the tokens scored
#define PPL_DEFAULT_WINDOWS "0.5,1,2,4,8"   // default windows, as multiples of the context

#endif
