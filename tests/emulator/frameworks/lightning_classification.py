"""A LightningModule trained with `Trainer(accelerator="gpu", devices="auto", strategy="ddp",
precision="16-mixed", num_nodes=...)`, as Lightning's SageMaker examples write it: Lightning counts the GPUs
itself and reads torchrun's variables. A small MLP over the toy sentiment task's bag of words.

Rank 0 prints one JSON line per epoch, {"epoch", "loss"}, and at the end what Lightning counted:
{"world_size", "num_devices", "num_nodes", "strategy", "precision", "root_device"}. Lightning's ModelCheckpoint
(verbose) prints its own line after each epoch, `Epoch 0, global step 4: 'train_loss' reached 0.69315 ...`.
"""

import argparse
import json
import os

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from sentiment_data import sentences

VOCABULARY = sorted({word for text, _ in sentences(512, seed=0) for word in text.split()})

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--num_nodes", type=int, default=len(json.loads(os.environ["SM_HOSTS"])))
args, _ = parser.parse_known_args()


def bag_of_words(rows):
    features = torch.tensor([[float(word in text.split()) for word in VOCABULARY] for text, _ in rows])
    return torch.utils.data.TensorDataset(features, torch.tensor([label for _, label in rows]))


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(len(VOCABULARY), 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        self.epoch_losses = []

    def training_step(self, batch, batch_index):
        features, labels = batch
        loss = torch.nn.functional.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def on_train_epoch_end(self):
        loss = self.trainer.callback_metrics["train_loss"].item()
        if self.trainer.is_global_zero:
            print(json.dumps({"epoch": self.current_epoch, "loss": round(loss, 6)}), flush=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


checkpoints = ModelCheckpoint(dirpath="/tmp/lightning-checkpoints", monitor="train_loss", verbose=True)
trainer = L.Trainer(accelerator="gpu", devices="auto", strategy="ddp", precision="16-mixed", num_nodes=args.num_nodes,
                    max_epochs=args.epochs, logger=False, callbacks=[checkpoints], enable_progress_bar=False)
model = Classifier()
trainer.fit(model, torch.utils.data.DataLoader(bag_of_words(sentences(256, seed=0)), batch_size=8, shuffle=True))
trainer.save_checkpoint(os.path.join(os.environ["SM_MODEL_DIR"], "model.ckpt"))  # every rank calls it; rank 0 writes
if trainer.is_global_zero:
    print(json.dumps({"world_size": trainer.world_size, "num_devices": trainer.num_devices,
                      "num_nodes": trainer.num_nodes, "strategy": type(trainer.strategy).__name__,
                      "precision": trainer.precision, "root_device": str(trainer.strategy.root_device)}), flush=True)
