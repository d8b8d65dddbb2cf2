/* fds.c (bridge) — adds ev.fds: the open file descriptors counted over the window (polled by
 * engine/collect/collect_fds.c), how often the count rose and fell, and what the new ones are
 * (sockets, pipes, files: the commonest path). Its keys are the table sop__evk_fds below
 * (docs/evidence.md is generated from it). Depends on schema.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"
#include "schema.h"

const sop_evk sop__evk_fds[] = {
    SOP_EVK_D("window_s", sop_fds_figs, window_s, "s", "time between the first and the last count"),
    SOP_EVK_I("polls", sop_fds_figs, polls, "", "counts taken (17 over the window at most)"),
    SOP_EVK_I("first", sop_fds_figs, first, "", "open descriptors at the first count"),
    SOP_EVK_I("last", sop_fds_figs, last, "", "... at the last"),
    SOP_EVK_I("max", sop_fds_figs, max, "", "... the most at any count"),
    SOP_EVK_I("rises", sop_fds_figs, rises, "", "intervals between counts in which it rose"),
    SOP_EVK_I("falls", sop_fds_figs, falls, "", "... in which it fell"),
    SOP_EVK_I("rises_first_half", sop_fds_figs, rises_first_half, "",
              "rises in the window's first half (a burst rises in one interval, a leak in both "
              "halves)"),
    SOP_EVK_I("rises_second_half", sop_fds_figs, rises_second_half, "", "... in its second half"),
    SOP_EVK_I("risen", sop_fds_figs, risen, "",
              "descriptors added over the rises (last - first is what stayed)"),
    SOP_EVK_D("growth_per_s", sop_fds_figs, growth_per_s, "1/s", "(last - first) / window_s"),
    SOP_EVK_I("new", sop_fds_figs, new_fds, "",
              "descriptors at the end whose number was not open at the start (new ones; a number "
              "closed and reused in the window looks old)"),
    SOP_EVK_I("new_sockets", sop_fds_figs, new_sockets, "", "of the new ones read: sockets"),
    SOP_EVK_I("new_pipes", sop_fds_figs, new_pipes, "", "... pipes"),
    SOP_EVK_I("new_files", sop_fds_figs, new_files, "", "... files (a path)"),
    SOP_EVK_I("new_other", sop_fds_figs, new_other, "", "... anything else (anon inodes, ...)"),
    SOP_EVK_T("new_path", sop_fds_figs, new_path, "the path most of the new files have"),
    SOP_EVK_I("new_path_count", sop_fds_figs, new_path_count, "", "how many of them have it"),
};
const size_t sop__evk_fds_n = sizeof sop__evk_fds / sizeof sop__evk_fds[0];

void sop__bridge_fds(sop_value *ev, const sop_fds_figs *f)
{
    if (!f || f->polls < 2)
        return;
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    sop__bridge_keys(o, f, sop__evk_fds, sop__evk_fds_n, "", NULL, NULL);
    sop__bridge_attach(ev, "fds", o);
}
