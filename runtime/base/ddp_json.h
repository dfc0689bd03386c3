/* ddp_json: writing JSON strings (the agent's error file, the job record, status --json). */
#ifndef DDP_JSON_H
#define DDP_JSON_H

#include <stdio.h>

/* s as a JSON string, quotes included; NULL as null. */
void ddp_json_string(FILE *f, const char *s);

#endif
