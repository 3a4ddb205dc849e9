"""torch's __torch_function__ helpers that torch.nn.functional exports (has_torch_function,
handle_torch_function, ...) and its small argument helpers (boolean_dispatch,
assert_int_or_pair): clgrad tensors carry no overrides, so nothing dispatches."""

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "boolean_dispatch", "assert_int_or_pair"]


# torch's __torch_function__ protocol: clgrad tensors carry no overrides, so nothing dispatches
def has_torch_function(relevant_args):
    """False: no argument overrides clgrad's functions (clgrad has no __torch_function__)."""
    return False


has_torch_function_unary = has_torch_function


def has_torch_function_variadic(*args):
    """False, as has_torch_function."""
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call public_api(*args, **kwargs): there is no override to hand the call to."""
    return public_api(*args, **kwargs)


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """torch's helper that picks if_true or if_false by a boolean argument."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else \
            args[arg_index] if arg_index < len(args) else default
        return (if_true if flag else if_false)(*args, **kwargs)
    fn.__name__ = func_name
    fn.__module__ = module_name
    return fn


def assert_int_or_pair(arg, arg_name, message):
    """torch's check that arg is an int or a pair of them."""
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)
