"""Library answers: each hands over verl's or the course's own function (or the solution's source). All must be refused.

LIBRARY: label -> (exercise id, args tuple)."""
import contextlib
import io

from verlstudy.kit.exercises import show_solution, solution_source
from verlstudy.lessons.l00_start_here import checks as checks00
from verlstudy.lessons.l01_memory_leak import checks as checks01
from verlstudy.lessons.l02_detach import checks as checks02
from verlstudy.lessons.l02_detach.upstream import upstream_detach_tree
from verlstudy.lessons.l03_router_replay import upstream as verl_fns
from verlstudy.lessons.l04_thd.thd import aligned_length
from verlstudy.lessons.l05_checkpoint.checkpoint import matches_prefix
from verlstudy.lessons.l06_external_modules.modules_env import parse_module_list
from verlstudy.lessons.l09_dead_config import check_attribute_reads

# the solution's own text, executed when this module is imported (before any check runs)
_ns = {}
exec(solution_source("7.3"), _ns)
exec_solution_7_3 = _ns["my_advantages"]


def print_and_exec_5_1(key, pattern):
    """Reads the solution at call time through show_solution's printout."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        show_solution("5.1")
    text = buf.getvalue()
    start = text.find("def matches_module")
    ns = {}
    exec(text[start:] if start >= 0 else text, ns)
    return ns["matches_module"](key, pattern)


def reference_leak_wrapped(seq_len, hidden, itemsize):
    return int(checks01._reference_leak(seq_len, hidden, itemsize))


LIBRARY = {
    "0.1: checks._reference_sample handed over": ("0.1", (checks00._reference_sample,)),
    "7.3: exec(solution_source('7.3')) at import": ("7.3", (exec_solution_7_3,)),
    "5.1: show_solution printout exec'd at call time": ("5.1", (print_and_exec_5_1,)),
    "2.1: verl's own detach_tree (upstream_detach_tree())": ("2.1", (upstream_detach_tree(),)),
    "3.3: verl's get_hf_config_attr (load_hf_config_attr())": ("3.3", (verl_fns.load_hf_config_attr(),)),
    "6.1: the course's parse_module_list": ("6.1", (parse_module_list,)),
    "5.1: the course's matches_prefix in a lambda": ("5.1", (lambda k, p: matches_prefix(k, p),)),
    "9.1: the checker module's _reference_attribute_reads": ("9.1", (check_attribute_reads._reference_attribute_reads,)),
    "1.1: checks._reference_leak wrapped in a def": ("1.1", (reference_leak_wrapped,)),
    "2.2: checks._reference_forward_step handed over": ("2.2", (checks02._reference_forward_step,)),
}
# a composition of a course helper the notebook imports: reported apart, not counted as a library answer
BORDERLINE = {
    "4.1: sum of the course's thd.aligned_length": ("4.1", (lambda lengths, tp, cp: sum(aligned_length(n, tp, cp) for n in lengths),)),
}
