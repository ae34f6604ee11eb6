"""Exercise 1.2 answers: find_growth_site(tracker, run_micro_batch) -> function name (str).

The tracker API from notebook 01: tracker.mark() returns a marker; tracker.top_sites(n, since=marker) lists the
allocation sites of what was allocated after the marker and is still alive, largest first (each Site has
.function, .bytes, .count and .label()).
"""


# --- wrong ---
def w_includes_first_micro_batch(tracker, run_micro_batch):
    # marks before the first micro-batch: one-off allocations (parameter grads, a one-off table) count as growth
    mark = tracker.mark()
    run_micro_batch()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def w_returns_site(tracker, run_micro_batch):
    # returns the Site, not its function name
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0]


def w_returns_label(tracker, run_micro_batch):
    # returns the label (file:line style), not the function name
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].label()


def w_most_allocations(tracker, run_micro_batch):
    # ranks by count of allocations, not bytes: the many-tiny-tensors helper wins
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    sites = tracker.top_sites(50, since=mark)
    return max(sites, key=lambda s: s.count).function


def w_only_one_run(tracker, run_micro_batch):
    # one micro-batch only: its one-off allocations dominate
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def w_smallest_site(tracker, run_micro_batch):
    # takes the last of a largest-first list
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(50, since=mark)[-1].function


def w_second_site(tracker, run_micro_batch):
    # off by one in the list
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    sites = tracker.top_sites(2, since=mark)
    return sites[1].function if len(sites) > 1 else sites[0].function


def w_hardcoded(tracker, run_micro_batch):
    # the example name from the exercise text, whatever was planted
    run_micro_batch()
    run_micro_batch()
    return "loss_func"


def w_whole_history(tracker, run_micro_batch):
    # no marker: everything alive since the tracker started, one-off table included
    run_micro_batch()
    run_micro_batch()
    return tracker.top_sites(1)[0].function


# --- right ---
def r_three_runs_marker_after_first(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    run_micro_batch()
    (top,) = tracker.top_sites(1, since=mark)
    return str(top.function)


def r_max_by_bytes(tracker, run_micro_batch):
    run_micro_batch()
    start = tracker.mark()
    run_micro_batch()
    sites = tracker.top_sites(100, since=start)
    best = max(sites, key=lambda site: site.bytes)
    return best.function


def r_sum_bytes_per_function(tracker, run_micro_batch):
    # groups the sites by function name first (one function may allocate at several lines)
    for _ in range(2):
        run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    totals = {}
    for site in tracker.top_sites(1000, since=mark):
        totals[site.function] = totals.get(site.function, 0) + site.bytes
    return max(totals, key=totals.get)


# --- unsure ---
def u_grows_across_two_windows(tracker, run_micro_batch):
    # counts growth over two marked windows and picks the function present in both with most bytes; right by
    # the text, unsure because a helper whose allocations appear in only one window would be skipped
    run_micro_batch()
    m1 = tracker.mark()
    run_micro_batch()
    m2 = tracker.mark()
    run_micro_batch()
    first = {s.function: s.bytes for s in tracker.top_sites(1000, since=m1)}
    second = {s.function for s in tracker.top_sites(1000, since=m2)}
    return max((f for f in first if f in second), key=first.get)


WRONG = {
    "marker before the first micro-batch": (w_includes_first_micro_batch,),
    "Site object": (w_returns_site,),
    "label": (w_returns_label,),
    "most allocations by count": (w_most_allocations,),
    "one run only": (w_only_one_run,),
    "smallest site": (w_smallest_site,),
    "second site": (w_second_site,),
    "hard-coded name": (w_hardcoded,),
    "no marker": (w_whole_history,),
}
RIGHT = {
    "three runs, marker after first": (r_three_runs_marker_after_first,),
    "max by bytes": (r_max_by_bytes,),
    "bytes summed per function": (r_sum_bytes_per_function,),
}
UNSURE = {
    "present in two windows": (u_grows_across_two_windows,),
}
