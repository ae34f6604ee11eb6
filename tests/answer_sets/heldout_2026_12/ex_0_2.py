"""0.2 find_unstable(text): fragments that change run to run."""
import re

ADDR = r"0x[0-9a-fA-F]{6,}"
DUR = r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b"
DATE = r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?"
PATH = r"/tmp/[\w./-]+"
PID = r"\bpid \d+"
PORT = r"(?:127\.0\.0\.1|localhost):\d+"


def _find(patterns, text):
    return [m.group(0) for p in patterns for m in re.finditer(p, text)]


# ---------------- wrong
def w_duration_no_end_boundary(text):
    return _find([ADDR, r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)", DATE, PATH, PID, PORT], text)


def w_address_lowercase_only(text):
    return _find([r"0x[0-9a-f]{6,}", DUR, DATE, PATH, PID, PORT], text)


def w_address_exactly_12(text):
    return _find([r"0x[0-9a-fA-F]{12}\b", DUR, DATE, PATH, PID, PORT], text)


def w_duration_integers_only(text):
    return _find([ADDR, r"\b\d+\s?(?:s|ms|us)\b", DATE, PATH, PID, PORT], text)


def w_date_without_time(text):
    return _find([ADDR, DUR, r"\b\d{4}-\d\d-\d\d", PATH, PID, PORT], text)


def w_duration_no_space(text):
    return _find([ADDR, r"\b\d+(?:\.\d+)?(?:s|ms|us)\b", DATE, PATH, PID, PORT], text)


def w_pid_digits_only(text):
    return _find([ADDR, DUR, DATE, PATH, r"(?<=pid )\d+", PORT], text)


def w_localhost_only(text):
    return _find([ADDR, DUR, DATE, PATH, PID, r"localhost:\d+"], text)


def w_whole_words_only(text):
    words = text.split()
    pats = [ADDR, r"\d+(?:\.\d+)?(?:s|ms|us)", r"\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?", r"/tmp/\S+", r"(?:127\.0\.0\.1|localhost):\d+"]
    return [w for w in words if any(re.fullmatch(p, w) for p in pats)]


def w_path_one_segment(text):
    return _find([ADDR, DUR, DATE, r"/tmp/\w+", PID, PORT], text)


def w_forgets_us(text):
    return _find([ADDR, r"\b\d+(?:\.\d+)?\s?m?s\b", DATE, PATH, PID, PORT], text)


# ---------------- right
_ONE = re.compile(
    r"0x[0-9a-fA-F]{6,}"
    r"|(?<![\w.])\d+(?:\.\d+)? ?(?:ms|us|s)(?!\w)"
    r"|\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2})?"
    r"|/tmp/\S+"
    r"|pid \d+"
    r"|(?:127\.0\.0\.1|localhost):\d+"
)


def r_one_alternation(text):
    return [m.group(0) for m in _ONE.finditer(text)]


def r_findall_tuple(text):
    kinds = {
        "address": r"0x[0-9A-Fa-f]{6,}",
        "duration": r"\b[0-9]+(?:\.[0-9]+)? ?(?:s|ms|us)\b",
        "date": r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2})?",
        "path": r"/tmp/\S+",
        "pid": r"\bpid [0-9]+",
        "port": r"\b(?:127\.0\.0\.1|localhost):[0-9]+",
    }
    out = []
    for pattern in kinds.values():
        out.extend(re.findall(pattern, text))
    return tuple(out)


def r_set(text):
    return set(_find([ADDR, DUR, DATE, PATH, PID, PORT], text))


WRONG = {
    "duration without a word boundary after the unit": (w_duration_no_end_boundary,),
    "address lower-case hex only": (w_address_lowercase_only,),
    "address exactly 12 hex digits": (w_address_exactly_12,),
    "durations without decimals": (w_duration_integers_only,),
    "date without the THH:MM part": (w_date_without_time,),
    "duration with no space allowed": (w_duration_no_space,),
    "pid: only the digits": (w_pid_digits_only,),
    "port: localhost only": (w_localhost_only,),
    "whole space-separated words only": (w_whole_words_only,),
    "path: one segment only": (w_path_one_segment,),
    "duration units s and ms only (forgets us)": (w_forgets_us,),
}
RIGHT = {
    "one alternation with lookarounds": (r_one_alternation,),
    "findall per kind, tuple": (r_findall_tuple,),
    "set of matches": (r_set,),
}
