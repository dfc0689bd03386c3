/* ddp_json: writing JSON strings where no JSON library may go: the static agent's error and
 * progress files (the CLI reads and writes JSON through jansson: cli/jobs/json_doc.h). */
#ifndef DDP_JSON_H
#define DDP_JSON_H

#include <stdio.h>

/* s as a JSON string, quotes included; NULL as null; bytes that are not UTF-8 as U+FFFD. */
void ddp_json_string(FILE *f, const char *s);

#endif
