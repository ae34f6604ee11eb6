"""Exercise 6.2: will_be_patched(imports, env_value), does toylib.model.forward() end up patched."""

# The toy (printed in the notebook): toylib/model.py binds `attention` with `from toylib.ops import attention` when
# imported; toylib_adaptor replaces toylib.ops.attention; toyverl runs verl 0.9.1's hook: a non-empty value split on
# "," and each entry imported. The script imports `imports` in order, then toylib.model. A bool; imports unchanged.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def _named(env_value):
    return (env_value or "").split(",")


def w_env_ignored(imports, env_value):
    # only an explicit adaptor import counts: toyverl's hook is forgotten
    for m in imports:
        if m == "toylib_adaptor":
            return True
        if m == "toylib.model":
            return False
    return False


def w_env_only(imports, env_value):
    # the variable alone decides: forgets that only a process importing toyverl runs the hook
    return "toylib_adaptor" in _named(env_value)


def w_order_ignored(imports, env_value):
    # any trigger anywhere counts, even after toylib.model bound the old attention
    return "toylib_adaptor" in imports or ("toyverl" in imports and "toylib_adaptor" in _named(env_value))


def w_none_crash(imports, env_value):
    # splits None: an unset variable raises AttributeError
    named = env_value.split(",")
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in named):
            return True
        if m == "toylib.model":
            return False
    return False


def w_ops_blocks(imports, env_value):
    # thinks importing toylib.ops before the adaptor freezes the op (the model binds at its own import, not ops')
    for m in imports:
        if m == "toylib.ops":
            return False
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if m == "toylib.model":
            return False
    return False


def w_string(imports, env_value):
    # returns what forward() prints, not a bool
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return "patched"
        if m == "toylib.model":
            return "vanilla"
    return "vanilla"


def w_appends_model(imports, env_value):
    # appends the final toylib.model import to the caller's list
    imports.append("toylib.model")
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if m == "toylib.model":
            return False
    return False


def w_unset_means_default(imports, env_value):
    # takes an unset variable for the image's default (the adaptor); unset means the hook imports nothing
    named = _named("toylib_adaptor" if env_value is None else env_value)
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in named):
            return True
        if m == "toylib.model":
            return False
    return False


def w_falls_off(imports, env_value):
    # no return at the end: None when toylib.model is imported last by the script
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if m == "toylib.model":
            return False


def w_toylib_counts(imports, env_value):
    # counts a variable naming toylib or toylib.ops as a patch (those modules hold the op, they do not patch it)
    triggers = {"toylib_adaptor", "toylib", "toylib.ops"}
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and triggers & set(_named(env_value))):
            return True
        if m == "toylib.model":
            return False
    return False


def w_last_import_wins(imports, env_value):
    # looks only at the last module imported before the script's own toylib.model import
    if not imports:
        return False
    m = imports[-1]
    return m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value))


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_index(imports, env_value):
    # everything imported before toylib.model's first import decides
    cut = imports.index("toylib.model") if "toylib.model" in imports else len(imports)
    before = imports[:cut]
    hook_patches = bool(env_value) and "toylib_adaptor" in env_value.split(",")
    return "toylib_adaptor" in before or ("toyverl" in before and hook_patches)


def r_simulate(imports, env_value):
    # simulates the modules: ops.attention, the adaptor's patch, the model's binding at import
    state = {"ops": None, "model_binds": None, "loaded": set()}

    def load(name):
        if name in state["loaded"]:
            return
        state["loaded"].add(name)
        if name in ("toylib.ops", "toylib"):
            if name == "toylib.ops" and state["ops"] is None:
                state["ops"] = "vanilla"
        elif name == "toylib_adaptor":
            load("toylib.ops")
            state["ops"] = "patched"
        elif name == "toylib.model":
            load("toylib.ops")
            state["model_binds"] = state["ops"]
        elif name == "toyverl":
            value = env_value if env_value is not None else ""
            if value:
                for entry in value.split(","):
                    load(entry)

    for name in list(imports) + ["toylib.model"]:
        load(name)
    return state["model_binds"] == "patched"


def r_any_before(imports, env_value):
    # takewhile up to toylib.model, then any trigger
    from itertools import takewhile

    entries = set(env_value.split(",")) if env_value else set()
    triggers = {"toylib_adaptor"} | ({"toyverl"} if "toylib_adaptor" in entries else set())
    return any(m in triggers for m in takewhile(lambda m: m != "toylib.model", imports))


WRONG = {
    "variable ignored": (w_env_ignored,),
    "variable alone": (w_env_only,),
    "order ignored": (w_order_ignored,),
    "None split": (w_none_crash,),
    "toylib.ops first blocks the patch": (w_ops_blocks,),
    "returns a str": (w_string,),
    "appends to imports": (w_appends_model,),
    "unset as the adaptor default": (w_unset_means_default,),
    "falls off the end (None)": (w_falls_off,),
    "toylib named counts as a patch": (w_toylib_counts,),
    "last import only": (w_last_import_wins,),
}

RIGHT = {
    "slice before toylib.model": (r_index,),
    "module simulation": (r_simulate,),
    "takewhile": (r_any_before,),
}

UNSURE = {}
