"""Runtime oracle probes (tests/oracle.py): the base model and its drafter on every rank."""

from types import SimpleNamespace

from pkg.model import BaseModel, DraftModel

CONFIG = SimpleNamespace()


def base_experts():
    BaseModel(CONFIG).set_experts(4)


def base_first():
    BaseModel(CONFIG).first_mlp()


def draft():
    model = DraftModel(CONFIG)
    model.set_draft_experts(4)
    model.first_draft_mlp()


PROBES = [base_experts, base_first, draft]
