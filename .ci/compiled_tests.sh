# The model and training tests with every module call compiled (clgrad.compile: recorded,
# replayed, fused; docs/compile.md). Sourced by .ci/run and tools/run_on_nvidia.sh.
# Two tests measure what only eager does (peak pool memory, which recordings keep higher; launch
# counts, to which a compiled call adds the copy of its output) and are left to the eager runs.
# $1: more of pytest's -k; PYTHON: the interpreter (default .venv/bin/python); the rest of
# pytest's arguments from PYTEST_ARGS.
compiled_tests() {
  CLGRAD_TEST_COMPILED=1 ${PYTHON:-.venv/bin/python} -m pytest ${PYTEST_ARGS:-} \
    tests/test_nn.py tests/test_nn_*.py \
    tests/test_transformer.py tests/test_rnn.py tests/test_rnn_fused.py tests/test_torch_programs.py \
    tests/test_amp.py tests/test_optim.py tests/test_checkpoint.py tests/test_conv.py tests/test_pool.py \
    tests/test_attention.py tests/test_embedding_bag.py tests/test_norm.py tests/test_train_example.py \
    tests/test_distributions_programs.py \
    -k "not test_peak_memory_lower and not test_one_kernel_forward_and_four_backward${1:+ and $1}"
}
