"""Exercise 6.2: will_be_patched(imports, env_value), held-out answers.

verl 0.9.1's hook: modules = os.getenv(VAR, ""); if modules: import each of modules.split(",").
"""


def _named(env_value):
    return (env_value or "").split(",") if env_value else []


# WRONG ---------------------------------------------------------------
def w_order_ignored(imports, env_value):
    # ignores order: an adaptor imported after toylib.model is too late
    return "toylib_adaptor" in imports or ("toyverl" in imports and "toylib_adaptor" in _named(env_value))


def w_env_alone(imports, env_value):
    # the variable alone patches: only verl's hook (toyverl) reads it
    return "toylib_adaptor" in _named(env_value) or "toylib_adaptor" in imports


def w_toyverl_always(imports, env_value):
    # assumes importing verl always patches, whatever the variable says
    for m in imports:
        if m in ("toyverl", "toylib_adaptor"):
            return True
        if m == "toylib.model":
            return False
    return False


def w_no_direct_import(imports, env_value):
    # forgets that importing the adaptor itself patches
    for m in imports:
        if m == "toyverl" and "toylib_adaptor" in _named(env_value):
            return True
        if m == "toylib.model":
            return False
    return False


def w_toylib_counts(imports, env_value):
    # takes naming toylib (the library, not the adaptor) as patching
    named = _named(env_value)
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and ({"toylib_adaptor", "toylib"} & set(named))):
            return True
        if m == "toylib.model":
            return False
    return False


def w_appends_model(imports, env_value):
    # appends the final import to the caller's list
    imports.append("toylib.model")
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if m == "toylib.model":
            return False
    return False


def w_falls_off(imports, env_value):
    # falls off the end with None where nothing decides: not a bool
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if m == "toylib.model":
            return False


def w_int(imports, env_value):
    # returns 1/0, the text asks for a bool
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return 1
        if m == "toylib.model":
            return 0
    return 0


def w_unset_default(imports, env_value):
    # takes an unset variable as the image default naming the adaptor
    named = _named("toylib_adaptor" if env_value is None else env_value)
    for m in imports:
        if m == "toylib_adaptor" or (m == "toyverl" and "toylib_adaptor" in named):
            return True
        if m == "toylib.model":
            return False
    return False


# RIGHT ---------------------------------------------------------------
def r_indices(imports, env_value):
    hook_patches = bool(env_value) and "toylib_adaptor" in env_value.split(",")
    triggers = [i for i, m in enumerate(imports) if m == "toylib_adaptor" or (m == "toyverl" and hook_patches)]
    model_at = imports.index("toylib.model") if "toylib.model" in imports else len(imports)
    return bool(triggers) and min(triggers) < model_at


def r_truncate(imports, env_value):
    before_model = imports[: imports.index("toylib.model")] if "toylib.model" in imports else list(imports)
    if "toylib_adaptor" in before_model:
        return True
    modules = env_value.split(",") if env_value else ()
    return "toyverl" in before_model and "toylib_adaptor" in modules


def r_state_machine(imports, env_value):
    patched = False
    model_loaded = False
    wanted = set((env_value or "").split(","))
    for module in imports:
        if model_loaded:
            break
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in wanted):
            patched = True
        elif module == "toylib.model":
            model_loaded = True
    return patched


WRONG = {
    "order ignored": (w_order_ignored,),
    "variable alone patches": (w_env_alone,),
    "toyverl always patches": (w_toyverl_always,),
    "direct adaptor import forgotten": (w_no_direct_import,),
    "naming toylib patches": (w_toylib_counts,),
    "appends to the caller's list": (w_appends_model,),
    "None at the end": (w_falls_off,),
    "1/0": (w_int,),
    "unset means the adaptor": (w_unset_default,),
}
RIGHT = {
    "first trigger before the model": (r_indices,),
    "truncate at the model": (r_truncate,),
    "state machine": (r_state_machine,),
}
UNSURE = {}
