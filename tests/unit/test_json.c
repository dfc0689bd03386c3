/* JSON through jansson (cli/jobs/json_doc.h): what a hostile or broken file is refused for, what
 * YAML would have read wrongly, and the agent's own writer (ddp_json_string, which the static
 * agent keeps) read back: a worker's stray bytes become U+FFFD, so its report stays readable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/json_doc.h"
#include "runtime/base/ddp_json.h"
#include "tests/unit/tap.h"

static int parses(const char *text)
{
    json_doc_t d;
    int rc = json_doc_parse(&d, text, strlen(text));
    json_doc_free(&d);
    return rc == 0;
}

/* ddp_json_string(s) as {"s": ...}, read back: the string, or NULL (malloc'd). */
static char *round_trip(const char *s)
{
    char *text = NULL, *back = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("{\"s\": ", f);
    ddp_json_string(f, s);
    fputc('}', f);
    fclose(f);
    json_doc_t d;
    if (json_doc_parse(&d, text, len) == 0) {
        const char *v = json_text(&d, json_root(&d), "s");
        back = v ? strdup(v) : NULL;
    }
    json_doc_free(&d);
    free(text);
    return back;
}

static void test_limits(void)
{
    char deep[200] = "", deeper[200] = "";
    for (int i = 0; i < JSON_DOC_MAX_DEPTH; i++)
        strcat(deep, "[");
    for (int i = 0; i < JSON_DOC_MAX_DEPTH; i++)
        strcat(deep, "]");
    snprintf(deeper, sizeof deeper, "[%s]", deep);
    ok(parses(deep), "%d levels of nesting are read", JSON_DOC_MAX_DEPTH);
    ok(!parses(deeper), "%d are refused", JSON_DOC_MAX_DEPTH + 1);
    size_t big = JSON_DOC_MAX_BYTES + 1;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    memcpy(huge, "[1]", 3);
    huge[big] = '\0';
    json_doc_t d;
    ok(json_doc_parse(&d, huge, big) == -1, "a document over %u bytes is refused",
       JSON_DOC_MAX_BYTES);
    json_doc_free(&d);
    free(huge);
    ok(!parses("{\"a\": 1, \"a\": 2}"), "a key given twice is refused");
    ok(!parses("{\"a\": 1"), "a file cut short is refused");
    ok(!parses("{\"a\": 1} {}"), "so is more after the document");
    ok(!parses("{a: 1}"), "and YAML's flow style, which is not JSON");
}

static void test_reading(void)
{
    const char text[] = "{\"path\": \"a\\/b\", \"n\": 42, \"x\": 1.5, \"no\": null, "
                        "\"list\": [1, 2, 3], \"t\": \"\\u00e9\"}";
    json_doc_t d;
    ok(json_doc_parse(&d, text, sizeof text - 1) == 0, "a document with every kind of value");
    const json_t *root = json_root(&d);
    is_str(json_text(&d, root, "path"), "a/b", "JSON's \\/ escape (which YAML 1.1 reads wrong)");
    is_str(json_text(&d, root, "n"), "42", "a whole number as its digits");
    is_str(json_text(&d, root, "x"), "1.5", "a real one too");
    ok(json_text(&d, root, "no") == NULL, "null is no text");
    ok(json_text(&d, root, "list") == NULL, "nor is a list");
    ok(json_items(json_child(root, "list")) == 3 && json_item(json_child(root, "list"), 3) == NULL,
       "a list's items, and none past its end");
    int64_t n = 0;
    ok(json_whole(root, "n", 0, 41, &n) == -1 && n == 0, "a number outside its bounds is left");
    ok(json_whole(root, "path", 0, 100, &n) == -1, "a string is no number");
    char word[4];
    ok(json_copy_text(root, "path", word, sizeof word) == 0 && !strcmp(word, "a/b"),
       "a string copied");
    is_str(json_text(&d, root, "t"), "\xc3\xa9", "a \\u escape as UTF-8");
    ok(json_child(json_child(root, "n"), "k") == NULL, "a number has no children");
    json_doc_free(&d);
}

static void test_writing(void)
{
    char *back = round_trip("plain \"quoted\" \\ tab\t line\n ctl\x01 caf\xc3\xa9 \xe2\x82\xac");
    is_str(back, "plain \"quoted\" \\ tab\t line\n ctl\x01 caf\xc3\xa9 \xe2\x82\xac",
           "the agent's writer: escapes and UTF-8 read back as they were");
    free(back);
    back = round_trip("bad \xff byte, cut \xe2\x82, overlong \xc0\xaf, surrogate \xed\xa0\x80");
    is_str(
        back,
        "bad \xef\xbf\xbd byte, cut \xef\xbf\xbd\xef\xbf\xbd, overlong \xef\xbf\xbd\xef\xbf\xbd, "
        "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
        "a worker's stray bytes become U+FFFD, and the report still reads");
    free(back);
    ok(json_string("caf\xe9") == NULL, "a record's text that is not UTF-8 is refused");
    json_t *shown = json_shown_string("caf\xe9");
    is_str(json_string_value(shown), "caf?", "shown to people, its stray byte is a '?'");
    json_decref(shown);
    json_t *o = json_object();
    json_object_set_new(o, "b", json_integer(1));
    json_object_set_new(o, "a", json_string("x"));
    char *text = json_dump_text(o);
    is_str(text, "{\n  \"b\": 1,\n  \"a\": \"x\"\n}\n", "written indented, keys in their order");
    free(text);
}

int main(void)
{
    test_limits();
    test_reading();
    test_writing();
    return done_testing();
}
