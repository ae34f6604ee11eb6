"""6.2 will_be_patched(imports, env_value): is toylib.model.forward() patched once toylib.model is imported?"""
ADAPTOR, VERL, MODEL = "toylib_adaptor", "toyverl", "toylib.model"


def _hook_names(env_value):
    return env_value.split(",") if env_value else []


# ---------------- wrong
def w_order_ignored(imports, env_value):
    return ADAPTOR in imports or (VERL in imports and ADAPTOR in _hook_names(env_value))


def w_env_alone(imports, env_value):
    return ADAPTOR in _hook_names(env_value) or ADAPTOR in imports


def w_toylib_counts(imports, env_value):
    names = _hook_names(env_value)
    for m in imports:
        if m == ADAPTOR or (m == VERL and any(n.startswith("toylib") for n in names)):
            return True
        if m == MODEL:
            return False
    return False


def w_ops_first_blocks(imports, env_value):
    # "the op was already imported, so the patch cannot replace it"
    names = _hook_names(env_value)
    for m in imports:
        if m in ("toylib.ops", MODEL):
            return False
        if m == ADAPTOR or (m == VERL and ADAPTOR in names):
            return True
    return False


def w_model_never_imported_false(imports, env_value):
    if MODEL not in imports:
        return False
    names = _hook_names(env_value)
    for m in imports:
        if m == ADAPTOR or (m == VERL and ADAPTOR in names):
            return True
        if m == MODEL:
            return False
    return False


def w_hook_only(imports, env_value):
    names = _hook_names(env_value)
    for m in imports:
        if m == VERL and ADAPTOR in names:
            return True
        if m == MODEL:
            return False
    return False


def w_crashes_on_none(imports, env_value):
    names = env_value.split(",")
    for m in imports:
        if m == ADAPTOR or (m == VERL and ADAPTOR in names):
            return True
        if m == MODEL:
            return False
    return False


def w_appends_model(imports, env_value):
    imports.append(MODEL)  # the script imports it last
    names = _hook_names(env_value)
    for m in imports:
        if m == ADAPTOR or (m == VERL and ADAPTOR in names):
            return True
        if m == MODEL:
            return False
    return False


def w_returns_none(imports, env_value):
    names = _hook_names(env_value)
    for m in imports:
        if m == ADAPTOR or (m == VERL and ADAPTOR in names):
            return True
        if m == MODEL:
            return False
    # falls off the end: None


def w_verl_anywhere_before_model(imports, env_value):
    # the hook patches as long as verl is imported at all, even after the model
    names = _hook_names(env_value)
    if VERL in imports and ADAPTOR in names:
        return True
    for m in imports:
        if m == ADAPTOR:
            return True
        if m == MODEL:
            return False
    return False


def w_env_empty_string_as_set(imports, env_value):
    # "set" means patched: an empty value still runs the hook and imports the adaptor
    for m in imports:
        if m == ADAPTOR or (m == VERL and env_value is not None):
            return True
        if m == MODEL:
            return False
    return False


# ---------------- right
def r_simulate(imports, env_value):
    attention_patched = False
    for module in [*imports, MODEL]:
        if module == ADAPTOR:
            attention_patched = True
        elif module == VERL and env_value:
            for name in env_value.split(","):
                if name == ADAPTOR:
                    attention_patched = True
        elif module == MODEL:
            return attention_patched
    return attention_patched


def r_index(imports, env_value):
    stop = imports.index(MODEL) if MODEL in imports else len(imports)
    hook = bool(env_value) and ADAPTOR in env_value.split(",")
    return any(m == ADAPTOR or (m == VERL and hook) for m in imports[:stop])


def r_sys_modules(imports, env_value):
    loaded = set()

    def do_import(name):
        if name in loaded:
            return
        if name == ADAPTOR:
            do_import("toylib.ops")
        loaded.add(name)
        if name == VERL and env_value:
            for entry in env_value.split(","):
                do_import(entry)
        if name == MODEL:
            state["bound"] = state["patched"]
        if name == ADAPTOR:
            state["patched"] = True

    state = {"patched": False, "bound": None}
    for name in imports:
        do_import(name)
    do_import(MODEL)
    return bool(state["bound"])


WRONG = {
    "order ignored": (w_order_ignored,),
    "variable alone patches (verl import not needed)": (w_env_alone,),
    "any toylib* name in the variable patches": (w_toylib_counts,),
    "importing toylib.ops first blocks the patch": (w_ops_first_blocks,),
    "model never imported in the list -> False": (w_model_never_imported_false,),
    "only verl's hook patches (direct adaptor import ignored)": (w_hook_only,),
    "env_value.split on None crashes": (w_crashes_on_none,),
    "appends toylib.model to the caller's list": (w_appends_model,),
    "returns None when nothing decides": (w_returns_none,),
    "verl imported after the model still patches": (w_verl_anywhere_before_model,),
    "any set value patches once verl is imported": (w_env_empty_string_as_set,),
}
RIGHT = {"simulate the imports": (r_simulate,), "slice before the model": (r_index,), "sys.modules model": (r_sys_modules,)}
