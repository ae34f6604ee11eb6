"""1.2 find_growth_site(tracker, run_micro_batch): the function whose allocations keep growing, by bytes."""
from collections import defaultdict


# ---------------- wrong
def w_no_warmup_all_live(tracker, run_micro_batch):
    run_micro_batch()
    return tracker.top_sites(1)[0].function


def w_mark_before_first(tracker, run_micro_batch):
    mark = tracker.mark()
    run_micro_batch()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def w_returns_label(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].label()


def w_returns_site(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0]


def w_by_count(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return max(tracker.top_sites(50, since=mark), key=lambda s: s.count).function


def w_largest_single_allocation(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return max(tracker.live(since=mark), key=lambda a: a.nbytes).site.function


def w_skips_loss_func(tracker, run_micro_batch):
    # "loss_func's stored output is meant to stay": skip it and report the next site
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return next(s.function for s in tracker.top_sites(50, since=mark) if s.function != "loss_func")


def w_totals_after_two(tracker, run_micro_batch):
    run_micro_batch()
    run_micro_batch()
    return tracker.top_sites(1)[0].function


def w_first_micro_batch_only(tracker, run_micro_batch):
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def w_outermost_frame(tracker, run_micro_batch):
    # groups by the outermost user frame of each stack (the caller), not the allocating function
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    by = defaultdict(int)
    for a in tracker.live(since=mark):
        by[a.frames[-1].function if a.frames else "<unknown>"] += a.nbytes
    return max(by, key=by.get)


# ---------------- right
def r_three_runs_mark_after_two(tracker, run_micro_batch):
    run_micro_batch()
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def r_sum_by_function(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    totals = defaultdict(int)
    for alloc in tracker.live(since=mark):
        totals[alloc.site.function] += alloc.nbytes
    return str(max(totals.items(), key=lambda kv: kv[1])[0])


def r_sites_summed(tracker, run_micro_batch):
    run_micro_batch()
    m = tracker.mark()
    run_micro_batch()
    per_fn = {}
    for s in tracker.top_sites(1000, since=m):
        per_fn[s.function] = per_fn.get(s.function, 0) + s.bytes
    return max(per_fn, key=per_fn.get)


WRONG = {
    "no warm-up: largest live site overall": (w_no_warmup_all_live,),
    "marker set before the first micro-batch": (w_mark_before_first,),
    "returns the site's label": (w_returns_label,),
    "returns the Site object": (w_returns_site,),
    "largest by allocation count": (w_by_count,),
    "site of the single largest allocation": (w_largest_single_allocation,),
    "skips loss_func by name": (w_skips_loss_func,),
    "totals after two micro-batches (no marker)": (w_totals_after_two,),
    "first micro-batch's survivors only": (w_first_micro_batch_only,),
    "grouped by outermost frame": (w_outermost_frame,),
}
RIGHT = {
    "mark after two warm-ups": (r_three_runs_mark_after_two,),
    "live() summed per function": (r_sum_by_function,),
    "top_sites summed per function": (r_sites_summed,),
}
