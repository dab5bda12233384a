"""Builds the tiny model and tokenizer the framework scripts train, locally (no hub access), into a folder that
`smtrain local` hands the job as the `model` channel, as a user would hand a model from S3.

    python tiny_model.py OUT_DIR

A 2-layer BERT with 16-wide hidden states and a word-level tokenizer over the toy vocabulary of
`sentiment_data.py`, saved with ``save_pretrained`` (config.json, model.safetensors, tokenizer.json).
"""

from __future__ import annotations

import sys

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

WORDS = ("the", "a", "film", "book", "meal", "was", "is", "very", "quite", "good", "great", "fine", "bad", "awful",
         "dull")
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


def build(out_dir: str) -> None:
    vocab = {token: index for index, token in enumerate((*SPECIAL, *WORDS))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", model_max_length=16)
    tokenizer.save_pretrained(out_dir)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=2)
    BertForSequenceClassification(config).save_pretrained(out_dir)


if __name__ == "__main__":
    build(sys.argv[1])
