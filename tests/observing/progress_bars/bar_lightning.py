"""A tiny LightningModule on synthetic data, trained with Lightning's progress bar on (`--bar tqdm`: TQDMProgressBar,
`--bar rich`: RichProgressBar, else Lightning's default), logging train_loss (prog_bar=True, each step) and val_loss
(each epoch); 256 rows in batches of `--batch-size` (8 unless told: 32 batches an epoch)."""
import argparse

import lightning as L
import torch
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--bar", default="tqdm")
parser.add_argument("--batch-size", type=int, default=8)
args, _ = parser.parse_known_args()
torch.manual_seed(0)


def data(rows):
    features = torch.randn(rows, 8)
    return torch.utils.data.TensorDataset(features, (features.sum(1) > 0).long())


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 2)

    def training_step(self, batch, batch_index):
        features, labels = batch
        loss = torch.nn.functional.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_index):
        features, labels = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.net(features), labels), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


callbacks = {"rich": [RichProgressBar()], "tqdm": [TQDMProgressBar()]}.get(args.bar, [])
trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=args.epochs, logger=False, enable_checkpointing=False,
                    callbacks=callbacks, enable_model_summary=False)
trainer.fit(Classifier(), torch.utils.data.DataLoader(data(256), batch_size=args.batch_size),
            torch.utils.data.DataLoader(data(64), batch_size=16))
