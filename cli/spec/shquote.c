#include "cli/spec/shquote.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_hmac.h"

static bool is_safe_char(unsigned char c)
{
    return isalnum(c) || strchr("@%+=:,./-_", c) != NULL;
}

void shquote_write(FILE *f, const char *value)
{
    const unsigned char *s = (const unsigned char *)value;
    bool bare = *s != '\0';
    bool control = false;
    for (const unsigned char *p = s; *p; p++) {
        bare = bare && is_safe_char(*p);
        control = control || *p < 0x20 || *p == 0x7f;
    }
    /* `=` or `~` first could be read as an assignment or tilde expansion in some positions. */
    if (bare && (s[0] == '=' || s[0] == '~'))
        bare = false;
    if (bare) {
        fputs(value, f);
        return;
    }
    if (!control) {
        fputc('\'', f);
        for (const unsigned char *p = s; *p; p++) {
            if (*p == '\'')
                fputs("'\\''", f);
            else
                fputc(*p, f);
        }
        fputc('\'', f);
        return;
    }
    fputs("$'", f);
    for (const unsigned char *p = s; *p; p++) {
        switch (*p) {
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\'':
            fputs("\\'", f);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\x%02x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('\'', f);
}

char *shquote_for_any_shell(const char *command)
{
    static const char head[] = "exec bash -c 'eval \"$(printf %s \"$0\" | base64 -d)\"' ";
    size_t len = strlen(command), n = sizeof head - 1;
    char *out = malloc(n + 4 * ((len + 2) / 3) + 1);
    if (!out)
        return NULL;
    memcpy(out, head, n);
    ddp_base64(command, len, out + n, 1);
    return out;
}

char *shquote_stdin_runner(void)
{
    return shquote_for_any_shell("IFS= read -r ddpjob_command || exit 125\neval \"$(printf %s "
                                 "\"$ddpjob_command\" | base64 -d)\"");
}

char *shquote_stdin_line(const char *command)
{
    size_t len = strlen(command);
    char *out = malloc(4 * ((len + 2) / 3) + 2);
    if (!out)
        return NULL;
    size_t n = ddp_base64(command, len, out, 1);
    out[n] = '\n';
    out[n + 1] = '\0';
    return out;
}

char *shquote(const char *value)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    shquote_write(f, value);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

bool shquote_is_identifier(const char *value)
{
    if (!(isalpha((unsigned char)value[0]) || value[0] == '_'))
        return false;
    for (const char *p = value + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}
