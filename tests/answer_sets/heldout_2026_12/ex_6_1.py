"""6.1 parse_modules(value): forgiving comma-separated module list."""
import re

WRONG = {
    "no stripping": (lambda v: [p for p in v.split(",") if p],),
    "splits on whitespace too": (lambda v: [p for p in re.split(r"[,\s]+", v) if p],),
    "empty entries kept ('' gives [''])": (lambda v: [p.strip() for p in v.split(",")],),
    "strips spaces but not tabs": (lambda v: [p.strip(" ") for p in v.split(",") if p.strip(" ")],),
    "drops repeated names": (lambda v: list(dict.fromkeys(p.strip() for p in v.split(",") if p.strip())),),
    "sorted": (lambda v: sorted(p.strip() for p in v.split(",") if p.strip()),),
    "lower-cased": (lambda v: [p.strip().lower() for p in v.split(",") if p.strip()],),
    "removes inner blanks": (lambda v: [p.replace(" ", "").replace("\t", "") for p in v.split(",") if p.strip()],),
    "filters before stripping (blank entries kept as '')": (lambda v: [p.strip() for p in v.split(",") if p],),
    "split(', ') on comma-space": (lambda v: [p for p in v.split(", ") if p],),
}


def r_regex(value):
    return [p for p in re.split(r"[ \t]*,[ \t]*", value.strip(" \t")) if p]


def r_loop(value):
    names, current = [], []
    for ch in value + ",":
        if ch == ",":
            name = "".join(current).strip(" \t")
            if name:
                names.append(name)
            current = []
        else:
            current.append(ch)
    return names


def r_tuple(value):
    return tuple(filter(None, (part.strip(" \t") for part in value.split(","))))


RIGHT = {"regex split on blank-comma-blank": (r_regex,), "character loop": (r_loop,), "tuple of filter": (r_tuple,)}
