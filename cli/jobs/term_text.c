#include "cli/jobs/term_text.h"

#include <unistd.h>

void term_text_write(FILE *out, const char *text, size_t len)
{
    if (!isatty(fileno(out))) {
        fwrite(text, 1, len, out);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
            putc('^', out);
            putc(c == 0x7f ? '?' : c + '@', out);
        } else {
            putc(c, out);
        }
    }
}
