"""Exercise 1.2: find_growth_site(tracker, run_micro_batch), the function whose allocations keep growing."""

# The text: run_micro_batch runs one more micro-batch in the active tracker; tracker.mark() gives a marker,
# tracker.top_sites(n, since=marker) groups live allocations by site, largest first (.function, .bytes, .count,
# .label()); tracker.live(since=marker) lists single allocations (.nbytes, .frames). The first micro-batch makes
# one-off allocations; the answer is a str naming a function.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_no_warmup(tracker, run_micro_batch):
    # marks before the first micro-batch: its one-off allocations (gradients, a big table) can win
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def w_everything_alive(tracker, run_micro_batch):
    # no marker at all: counts everything alive, one-off allocations included
    run_micro_batch()
    run_micro_batch()
    return tracker.top_sites(1)[0].function


def w_returns_site(tracker, run_micro_batch):
    # returns the Site object, not its function name
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0]


def w_returns_label(tracker, run_micro_batch):
    # returns the site's label, not the function's name
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].label()


def w_most_allocations(tracker, run_micro_batch):
    # ranks by number of allocations: a site of many tiny tensors wins over the leak in bytes
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return max(tracker.top_sites(50, since=mark), key=lambda s: s.count).function


def w_largest_single(tracker, run_micro_batch):
    # the function of the single largest allocation, not the most bytes in total
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    biggest = max(tracker.live(since=mark), key=lambda a: a.nbytes)
    return biggest.frames[0].function


def w_bytes_per_allocation(tracker, run_micro_batch):
    # ranks by bytes per allocation: favours a site of few big allocations over the total
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return max(tracker.top_sites(50, since=mark), key=lambda s: s.bytes / max(s.count, 1)).function


def w_second_site(tracker, run_micro_batch):
    # off by one in the ranking: takes the runner-up
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(2, since=mark)[1].function


def w_smallest_site(tracker, run_micro_batch):
    # thinks the list is sorted ascending: takes the last (smallest) site
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(50, since=mark)[-1].function


def w_hardcoded(tracker, run_micro_batch):
    # the lesson's leak site named from memory, whatever is planted
    return "create_tensor_recv_prev"


def w_caller_name(tracker, run_micro_batch):
    # names the micro-batch function it was handed, not the allocating one
    return run_micro_batch.__name__


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_two_warmups(tracker, run_micro_batch):
    # two micro-batches to settle, then the top site of what two more leave alive
    run_micro_batch()
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    run_micro_batch()
    return str(tracker.top_sites(1, since=mark)[0].function)


def r_sum_by_function(tracker, run_micro_batch):
    # one function may allocate at several lines: sum the sites' bytes per function name
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    totals = {}
    for site in tracker.top_sites(1000, since=mark):
        totals[site.function] = totals.get(site.function, 0) + site.bytes
    return max(totals, key=totals.get)


def r_max_bytes(tracker, run_micro_batch):
    # largest total bytes among the sites, by max() rather than trusting the order
    run_micro_batch()
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return max(tracker.top_sites(20, since=mark), key=lambda s: s.bytes).function


WRONG = {
    "no warm-up micro-batch": (w_no_warmup,),
    "no marker: everything alive": (w_everything_alive,),
    "returns the Site": (w_returns_site,),
    "returns the label": (w_returns_label,),
    "ranked by count": (w_most_allocations,),
    "largest single allocation": (w_largest_single,),
    "ranked by bytes per allocation": (w_bytes_per_allocation,),
    "runner-up site": (w_second_site,),
    "smallest site": (w_smallest_site,),
    "hard-coded lesson site": (w_hardcoded,),
    "name of run_micro_batch": (w_caller_name,),
}

RIGHT = {
    "two warm-ups, two measured": (r_two_warmups,),
    "bytes summed per function": (r_sum_by_function,),
    "max by bytes": (r_max_bytes,),
}


def u_frame_zero_function(tracker, run_micro_batch):
    # sums single allocations by their innermost frame's function: equals the site's function only if a Site is
    # keyed on that same frame; the text does not say how a site is chosen from a stack
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    totals = {}
    for a in tracker.live(since=mark):
        totals[a.frames[0].function] = totals.get(a.frames[0].function, 0) + a.nbytes
    return max(totals, key=totals.get)


UNSURE = {
    "sum of live allocations by innermost frame": (u_frame_zero_function,),
}
