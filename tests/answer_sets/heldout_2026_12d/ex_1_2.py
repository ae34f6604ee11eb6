"""Exercise 1.2: find_growth_site(tracker, run_micro_batch), held-out answers.

Tracker API as the notebook shows it: mark(), top_sites(n, since=mark) -> sites with .function/.bytes/.count,
live(since=mark) -> allocations with .nbytes/.seq.
"""


# WRONG ---------------------------------------------------------------
def w_from_start(tracker, run):
    # counts from the start: the first micro-batch's one-off allocations (param grads, tables) win
    mark = tracker.mark()
    run()
    run()
    return tracker.top_sites(1, since=mark)[0].function


def w_one_run_only(tracker, run):
    # runs only once: nothing separates growth from one-off allocations
    mark = tracker.mark()
    run()
    return tracker.top_sites(1, since=mark)[0].function


def w_returns_site(tracker, run):
    # returns the Site object, the text asks for a str
    run()
    mark = tracker.mark()
    run()
    return tracker.top_sites(1, since=mark)[0]


def w_returns_label(tracker, run):
    # returns the site's text (str of the Site), not its function name
    run()
    mark = tracker.mark()
    run()
    return str(tracker.top_sites(1, since=mark)[0])


def w_largest_single(tracker, run):
    # the site with the largest allocation on average, not the most bytes in total
    run()
    mark = tracker.mark()
    run()
    return max(tracker.top_sites(50, since=mark), key=lambda s: s.bytes / max(s.count, 1)).function


def w_most_allocations(tracker, run):
    # ranks sites by how many allocations, not bytes: the helper with many tiny tensors wins
    run()
    mark = tracker.mark()
    run()
    return max(tracker.top_sites(50, since=mark), key=lambda s: s.count).function


def w_last_site(tracker, run):
    # takes the smallest of the top sites (wrong end of the ranking)
    run()
    mark = tracker.mark()
    run()
    return tracker.top_sites(50, since=mark)[-1].function


def w_hardcoded(tracker, run):
    # names the lesson's own leak whatever is planted
    run()
    run()
    return "create_tensor_recv_prev"


# RIGHT ---------------------------------------------------------------
def r_two_warmups(tracker, run):
    run()
    run()
    mark = tracker.mark()
    run()
    (top,) = tracker.top_sites(1, since=mark)
    return str(top.function)


def r_sum_by_bytes(tracker, run):
    run()
    mark = tracker.mark()
    run()
    sites = tracker.top_sites(100, since=mark)
    return max(sites, key=lambda s: s.bytes).function


def r_consistent_over_two(tracker, run):
    run()
    first = tracker.mark()
    run()
    second = tracker.mark()
    run()
    totals = {}
    for since in (first, second):
        for site in tracker.top_sites(100, since=since):
            totals[site.function] = totals.get(site.function, 0) + site.bytes
    return max(totals, key=totals.get)


WRONG = {
    "mark before the first micro-batch": (w_from_start,),
    "a single micro-batch": (w_one_run_only,),
    "returns the Site": (w_returns_site,),
    "returns str(Site)": (w_returns_label,),
    "single largest allocation": (w_largest_single,),
    "most allocations by count": (w_most_allocations,),
    "last of the ranking": (w_last_site,),
    "hard-coded lesson answer": (w_hardcoded,),
}
RIGHT = {
    "two warm-ups, top site": (r_two_warmups,),
    "max by site bytes": (r_sum_by_bytes,),
    "bytes summed over two windows": (r_consistent_over_two,),
}
UNSURE = {}
