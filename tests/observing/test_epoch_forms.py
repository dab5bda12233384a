"""The epoch each published framework prints, read and counted from 1 as progress and tuning show it; and the
lines that only look like an epoch (a setting, a timing, a hyperparameter dump) read as none."""

from __future__ import annotations

import pytest

from orchestrator.observing.epochs import EpochCounter, line_epoch

BAR = "\u2588"

# A 3-epoch run's lines as each framework prints them, in order, with the epoch each line is in, counted from 1.
RUNS = {
    # transformers 5.24.0, ProgressCallback.on_log: every float as f"{v:.4g}", the dict's `epoch` the epochs done
    # (`epoch + (step + 1) / steps_in_epoch`); the dict follows the bar in its line. 3 steps an epoch.
    "transformers 5.24.0": [
        (f"\r 11%|{BAR}         | 1/9 [00:00<00:02,  3.20it/s]\r{{'loss': '0.6931', 'grad_norm': '1.375', "
         "'learning_rate': '5e-05', 'epoch': '0.3333'}", 1),
        (f"\r 33%|{BAR * 3}       | 3/9 [00:01<00:02,  3.20it/s]\r{{'loss': '0.6812', 'grad_norm': '1.2', "
         "'learning_rate': '3.889e-05', 'epoch': '1'}", 1),
        ("{'eval_loss': '0.6701', 'eval_runtime': '0.1234', 'eval_samples_per_second': '81.03', "
         "'eval_steps_per_second': '8.103', 'epoch': '1'}", 1),
        (f"\r 44%|{BAR * 4}      | 4/9 [00:01<00:01,  3.20it/s]\r{{'loss': '0.66', 'grad_norm': '1.1', "
         "'learning_rate': '3.333e-05', 'epoch': '1.333'}", 2),
        ("{'train_runtime': '3.21', 'train_samples_per_second': '28.04', 'train_steps_per_second': '2.804', "
         "'train_loss': '0.65', 'epoch': '3'}", 3),
    ],
    # transformers 4.x, Trainer.log: `logs["epoch"] = round(self.state.epoch, 2)`, floats printed as they are.
    "transformers 4.x": [
        ("{'loss': 0.6931, 'learning_rate': 5e-05, 'epoch': 0.33}", 1),
        ("{'eval_loss': 0.6701, 'eval_runtime': 0.1234, 'epoch': 1.0}", 1),
        ("{'loss': 0.6512, 'learning_rate': 3.333e-05, 'epoch': 1.67}", 2),
        ("{'train_runtime': 3.21, 'train_loss': 0.65, 'epoch': 3.0}", 3),
    ],
    # amazon-sagemaker-examples' PyTorch MNIST (tests/examples/mnist_sagemaker_containers, @1732bc2):
    # `for epoch in range(1, args.epochs + 1)`, "Train Epoch: {} [{}/{} ({:.0f}%)] Loss: {:.6f}".
    "SageMaker PyTorch MNIST": [
        ("Train Epoch: 1 [0/60000 (0%)] Loss: 2.301337", 1),
        ("Train Epoch: 1 [6400/60000 (11%)] Loss: 0.512345", 1),
        ("Test set: Average loss: 0.1012, Accuracy: 9690/10000 (97%)", None),
        ("Train Epoch: 3 [59520/60000 (99%)] Loss: 0.043210", 3),
    ],
    # torchvision's references/classification (utils.MetricLogger.log_every, header f"Epoch: [{epoch}]"),
    # `for epoch in range(args.start_epoch, args.epochs)`.
    "torchvision references": [
        ("Epoch: [0]  [   0/5005]  eta: 2 days, 3:22:32  lr: 0.1  img/s: 47.3  loss: 6.9485 (6.9485)  "
         "acc1: 0.0000 (0.0000)  acc5: 0.0000 (0.0000)  time: 36.6000  data: 30.1000  max mem: 10283", 1),
        ("Epoch: [1]  [ 100/5005]  eta: 0:35:10  lr: 0.1  img/s: 1200.0  loss: 6.1 (6.5)", 2),
        ("Epoch: [2]  [5000/5005]  eta: 0:00:01  lr: 0.1  img/s: 1200.0  loss: 5.2 (5.3)", 3),
    ],
    # Accelerate's examples/nlp_example.py: `accelerator.print(f"epoch {epoch}:", eval_metric)`, 0-based.
    "Accelerate examples": [
        ("epoch 0: {'accuracy': 0.6838235294117647, 'f1': 0.8122270742358079}", 1),
        ("epoch 2: {'accuracy': 0.7916666666666666, 'f1': 0.8554817275747508}", 3),
    ],
    # lightning 2.6.6, TQDMProgressBar: "Epoch {current_epoch}", 0-based.
    "Lightning's bar": [
        (f"\rEpoch 0:  50%|{BAR * 5}     | 2/4 [00:01<00:01,  2.00it/s, v_num=0, train_loss_step=0.693]", 1),
        (f"\rEpoch 2: 100%|{BAR * 10}| 4/4 [00:02<00:00,  2.00it/s, v_num=0, train_loss_step=0.412]", 3),
    ],
    # lightning 2.6.6, ModelCheckpoint(verbose=True): f"Epoch {epoch:d}, global step {step:d}: ...", 0-based.
    "Lightning's checkpoint line": [
        ("Epoch 0, global step 32: 'train_loss' reached 0.69315 (best 0.69315), saving model to "
         "'/tmp/checkpoints/epoch=0-step=32.ckpt' as top 1", 1),
        ("Epoch 2, global step 96: 'train_loss' was not in top 1", 3),
    ],
    # pytorch/examples' word_language_model/main.py (@cd01f93): `for epoch in range(1, args.epochs+1)`.
    "PyTorch word language model": [
        ("| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.60 | loss  6.89 | ppl   986.30", 1),
        ("| end of epoch   1 | time: 51.32s | valid loss  5.89 | valid ppl   361.84", 1),
        ("| epoch   3 |  2800/ 2983 batches | lr 5.00 | ms/batch 45.10 | loss  4.71 | ppl   111.05", 3),
        ("| End of training | test loss  5.82 | test ppl   336.78", None),
    ],
    # Scripts people write: the colon form, counted as printed (from 1 here: no epoch 0).
    "a script's `epoch: N`": [
        ("epoch: 1, train_loss: 0.52", 1),
        ("Epoch: 2 | loss: 0.41", 2),
        ("epoch: 3, train_loss: 0.33", 3),
    ],
    # A script of one's own: its tqdm bar labelled `desc=f"epoch {epoch}"` from 0, its line `epoch={epoch + 1}`.
    "a script's bar from 0 beside its line from 1": [
        (f"\repoch 0:  50%|{BAR * 5}     | 8/16 [00:00<00:00, 75.67it/s]", 1),
        ("epoch=1 loss=2.7378", 1),
        (f"\repoch 2: 100%|{BAR * 10}| 16/16 [00:00<00:00, 107.29it/s]", 3),
        ("epoch=3 loss=0.2398", 3),
    ],
}


@pytest.mark.parametrize("framework", RUNS)
def test_each_frameworks_epoch_is_read_and_counted_from_one(framework):
    counter = EpochCounter()
    counted = []
    for line, _ in RUNS[framework]:
        mark = line_epoch(line)
        counted.append(None if mark is None else counter.count(mark))

    assert counted == [epoch for _, epoch in RUNS[framework]]


@pytest.mark.parametrize("line", [
    "epochs: 10",                                               # a setting printed at start
    "Namespace(batch_size=64, epochs=10, lr=0.01, log_interval=100)",  # argparse's dump (SageMaker MNIST)
    "{'epochs': 3, 'lr': 0.05, 'batch-size': 64}",              # a hyperparameter dump
    'SM_HPS={"epochs":3,"lr":0.05}',                            # the training toolkit's environment
    "epoch_time: 3.2",
    "`Trainer.fit` stopped: `max_epochs=3` reached.",           # lightning 2.6.6
    "num_epochs: 5, start_epoch=0",
])
def test_what_only_looks_like_an_epoch_is_none(line):
    assert line_epoch(line) is None
