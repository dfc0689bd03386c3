/* What an upload leaves behind (ignore_rules.h): the defaults, .gitignore's forms, the last
 * matching pattern deciding; and what it never sends, whatever they say (upload_never). */
#include "cli/laptop/ignore_rules.h"
#include "cli/laptop/upload.h"
#include "tests/unit/tap.h"

int main(void)
{
    ignore_rules_t r;
    ddp_error_t err;
    ok(ignore_rules_parse(NULL, &r, &err) == 0, "the defaults alone");
    ok(ignore_rules_skip(&r, ".git", true) && ignore_rules_skip(&r, "sub/.git", true),
       ".git/ at any depth");
    ok(!ignore_rules_skip(&r, ".git", false), "a file named .git is no folder: sent");
    ok(ignore_rules_skip(&r, ".ddpjob", true) && ignore_rules_skip(&r, "checkpoints", true) &&
           ignore_rules_skip(&r, "out/model.ckpt", false) &&
           ignore_rules_skip(&r, "run/checkpoint.ddpt", false),
       "job records and checkpoints stay behind");
    ok(!ignore_rules_skip(&r, "train.py", false), "code is sent");
    ignore_rules_free(&r);

    ok(ignore_rules_parse("# data\n*.npy\n/build/\ndocs/*.pdf\n!keep.npy\n  \nlogs/**\n", &r,
                          &err) == 0,
       "a .ddpjobignore");
    ok(ignore_rules_skip(&r, "a.npy", false) && ignore_rules_skip(&r, "x/y/b.npy", false),
       "*.npy at any depth");
    ok(!ignore_rules_skip(&r, "keep.npy", false), "! takes keep.npy back");
    ok(ignore_rules_skip(&r, "build", true) && !ignore_rules_skip(&r, "src/build", true),
       "/build/ is the top folder only");
    ok(ignore_rules_skip(&r, "docs/a.pdf", false) &&
           !ignore_rules_skip(&r, "docs/sub/a.pdf", false),
       "docs/*.pdf: '*' stops at '/'");
    ok(ignore_rules_skip(&r, "logs/x/y.txt", false), "logs/** crosses folders");
    ok(!ignore_rules_skip(&r, "# data", false), "a comment is no pattern");
    ignore_rules_free(&r);

    ok(upload_never(".ssh") && upload_never("sub/.gnupg") && upload_never("a/b/.aws") &&
           upload_never(".netrc") && upload_never("x/.git-credentials"),
       "credentials' folders and files, at any depth, are never sent");
    ok(upload_never(".config/ddpjob") && upload_never("home/.local/state/ddpjob") &&
           !upload_never("my.config/ddpjob") && !upload_never(".config") && !upload_never("ssh") &&
           !upload_never("data/.sshx"),
       "... by their names and paths' ends only");
    return done_testing();
}
