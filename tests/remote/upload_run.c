/* upload_run ALIAS LOCAL_DIR REMOTE_DIR: upload.h's upload_tree over one SSH login to ALIAS (as
 * ~/.ssh/config and ~/.ssh/known_hosts say); upload_run --install ALIAS PREFIX VERSION:
 * remote_install.h's remote_install of the tree PREFIX. For tests/agent/laptop.sh, until
 * `submit --on` does both itself. Prints the summary; exit 0, or 1 with the error (and what was
 * sent). */
#include <stdio.h>
#include <string.h>

#include "runtime/base/ddp_clock.h"
#include "cli/laptop/remote_install.h"
#include "cli/ssh/ssh_config.h"
#include "cli/ssh/ssh_session.h"
#include "cli/laptop/upload.h"

int main(int argc, char **argv)
{
    int install = argc == 5 && !strcmp(argv[1], "--install");
    if (argc != 4 && !install) {
        fprintf(stderr, "usage: upload_run [--install] ALIAS LOCAL_DIR REMOTE_DIR|VERSION\n");
        return 2;
    }
    argv += install;
    char config[4096], known[4096], text[256];
    ssh_expand_home("~/.ssh/config", config, sizeof config);
    ssh_expand_home("~/.ssh/known_hosts", known, sizeof known);
    ddp_error_t err;
    ssh_target_t t;
    int64_t deadline = ddp_deadline_in(60000);
    ssh_session_t *s = NULL;
    transfer_summary_t sum = {0};
    upload_plan_t plan = {0};
    /* The remote folder is the user's own (what submit --on makes of a profile's remote_dir). */
    const upload_place_t place = {.trusted = argv[3], .keep = 0700};
    int sent = 0;
    int rc = ssh_session_init(&err) || ssh_config_lookup(config, argv[1], &t, &err) ||
             (!install && upload_plan(argv[2], &plan, &err)) ||
             !(s = ssh_session_open(argv[1], &t, known, 0, NULL, deadline, &err)) ||
             (install ? remote_install(s, argv[2], argv[3], deadline, &sent, &sum, &err)
                      : upload_tree(s, argv[2], &plan, argv[3], &place, deadline, &sum, &err));
    upload_plan_free(&plan);
    transfer_summary_text(&sum, "uploaded", text, sizeof text);
    if (rc)
        fprintf(stderr, "upload_run: %s (%s)\n", err.msg, text);
    else
        printf("%s%s\n", install ? (sent ? "installed: " : "already installed: ") : "", text);
    if (s)
        ssh_session_close(s);
    return rc ? 1 : 0;
}
