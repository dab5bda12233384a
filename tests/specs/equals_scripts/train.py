"""A training script written for smtrain's tests, in the form nanoGPT made common: its settings are module
globals, and a configurator file it runs with exec() replaces them from `--key=value` arguments only."""

batch_size = 8
n_layer = 2
learning_rate = 0.001

exec(open('configurator.py').read())  # settings from the command line, `--key=value` each
print(f"batch_size={batch_size} n_layer={n_layer} learning_rate={learning_rate}")
