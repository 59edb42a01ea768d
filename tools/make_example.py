#!/usr/bin/env python3
"""Regenerate and verify the bundled example series in ``series/``.

The example is an upstream-like tree (``series/upstream/``), a seven-patch series on top of it
(``series/patches/``) and an "upstream pull" of four later upstream commits
(``series/upstream-pull/``).  The content of every patch and every upstream-pull commit is
defined in this file as literal ``(path, old, new)`` replacements; this script builds the
commits in a throw-away repository with a sealed git environment and fixed identities and
dates, and writes each commit out with ``git format-patch``.  See ``series/README.md`` for the
recipe this implements.

    python tools/make_example.py            # rewrite the generated files, then verify
    python tools/make_example.py --check    # verify; exit 1 if committed files differ

Both modes verify, on scratch repositories: the base commit id, that the series applies in
order with ``git am`` (giving the very same commits) and with ``quilt push -a --fuzz=0``, that
the upstream pull applies with ``git am``, and the four claims about how each patch replays on
the pulled base.  Nothing is written unless every check passes.

Python 3.10+, standard library only.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERIES_DIR = ROOT / "series"
UPSTREAM_DIR = SERIES_DIR / "upstream"
PATCHES_DIR = SERIES_DIR / "patches"
PULL_DIR = SERIES_DIR / "upstream-pull"

BASE_MESSAGE = "Upstream snapshot"
BASE_DATE = "2026-01-05T10:00:00+00:00"
UPSTREAM_REF = "upstream/main"
UPSTREAM_IDENT = ("Upstream Maintainers", "upstream@example.org")
FORK_IDENT = ("Fork Maintainer", "fork@example.org")
SERIES_DESCRIPTION = (
    "# Example fork of srt: EAGLE-3 speculative decoding with Kimi-K2.5 on 8 PCIe GPUs."
)

FORMAT_PATCH_ARGS = (
    "format-patch",
    "-1",
    "--stdout",
    "--zero-commit",
    "--full-index",
    "--no-signature",
    "--no-renames",
    "--binary",
)


class ExampleError(Exception):
    """A generation step or a verification failed."""


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of ``old`` in ``path`` with ``new``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Change:
    """One commit: a fork patch (``tag`` set) or an upstream-pull commit (``claim`` set)."""

    name: str
    subject: str
    body: str
    date: str
    edits: tuple[Edit, ...]
    tag: str = ""
    claim: str = ""
    probe: str = ""  # a fork patch's probe: its last paragraph, 'Patchstack-Probe: <probe>'

    @property
    def message(self) -> str:
        probe = f"\n\nPatchstack-Probe: {self.probe}" if self.probe else ""
        return f"{self.subject}\n\n{self.body.strip()}{probe}\n"


# --------------------------------------------------------------------------------------------
# The seven fork patches, in series order.  Each edits one file.

KIMI = "srt/models/kimi_k25.py"
DEEPSEEK = "srt/models/deepseek_v2.py"
COMMUNICATOR = "srt/layers/communicator.py"
ENGINE = "srt/entrypoints/engine.py"
SCHEDULER = "srt/managers/scheduler.py"
MLA = "srt/layers/attention/flashinfer_mla_backend.py"
TOPK = "srt/layers/moe/topk.py"

# The essential patches' probes: each passes with its patch and fails without it (verified
# below). The tree has no torch and the models import modules it lacks, so the kimi probe reads
# the class from the source, and the communicator probe imports the module with an empty torch.
KIMI_PROBE = (
    "python3 -c \"import ast; k = [c for c in ast.parse(open('srt/models/kimi_k25.py').read())"
    ".body if getattr(c, 'name', '') == 'KimiK25ForConditionalGeneration'][0];"
    " assert 'set_eagle3_layers_to_capture' in [getattr(f, 'name', '') for f in k.body]\""
)
DEEPSEEK_PROBE = (
    "grep -q 'aux_hidden_states.append(hidden_states.clone())' srt/models/deepseek_v2.py"
)
COMMUNICATOR_PROBE = (
    "python3 -c \"import sys, types; sys.modules['torch'] = types.ModuleType('torch');"
    " import srt.layers.communicator as c; c.get_device_sm = lambda: 120;"
    ' assert c.fused_allreduce_supported()"'
)

PATCHES: tuple[Change, ...] = (
    Change(
        name="kimi-k25-eagle3-delegation.patch",
        tag="essential",
        date="Tue, 6 Jan 2026 09:00:00 +0000",
        subject="kimi_k25: delegate EAGLE-3 hooks to the language model",
        probe=KIMI_PROBE,
        body="""
EAGLE-3 speculative decoding calls three methods on the target model:
set_eagle3_layers_to_capture() to choose the layers whose hidden states the
draft model reads, and get_embed_and_head()/set_embed_and_head() to share
the embedding and LM head with the draft model. DeepseekV3ForCausalLM has
them, but KimiK25ForConditionalGeneration wraps it as self.language_model
and does not, so the server fails at startup with an AttributeError as soon
as --speculative-algorithm EAGLE3 is used with Kimi-K2.5.

All three hooks are about the text backbone, so forward them unchanged.
Without this patch the model does not run with EAGLE-3 at all.
""",
        edits=(
            Edit(
                KIMI,
                """\
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

""",
                """\
        return self.language_model(input_ids, positions, forward_batch, input_embeds)

    # EAGLE-3 talks to the target model through the three hooks below; all of them
    # concern the text backbone, so they delegate to it.  Without them, starting the
    # server with EAGLE-3 fails with an AttributeError.
    def set_eagle3_layers_to_capture(self, layer_ids: list[int] | None = None) -> None:
        \"\"\"Capture the hidden states of these language-model layers.\"\"\"
        self.language_model.set_eagle3_layers_to_capture(layer_ids)

    def get_embed_and_head(self) -> tuple[torch.Tensor, torch.Tensor]:
        \"\"\"The embedding and LM head weights the draft model shares.\"\"\"
        return self.language_model.get_embed_and_head()

    def set_embed_and_head(self, embed: torch.Tensor, head: torch.Tensor) -> None:
        \"\"\"Replace the embedding and LM head weights with shared ones.\"\"\"
        self.language_model.set_embed_and_head(embed, head)

""",
            ),
        ),
    ),
    Change(
        name="deepseek-v2-eagle3-capture.patch",
        tag="essential",
        date="Wed, 7 Jan 2026 09:00:00 +0000",
        subject="deepseek_v2: capture the embedding for EAGLE-3 layer 0",
        probe=DEEPSEEK_PROBE,
        body="""
The EAGLE-3 draft head for Kimi-K2.5 is trained on the hidden states that go
into layers 0, 30 and 58 of the target model (the checkpoint's
eagle_aux_hidden_state_layer_ids are the layers whose output is captured,
so the capture happens at id + 1). Capturing at layer 0 crashed: before the
first layer there is no residual yet, and hidden_states + residual raised a
TypeError on None. The state that enters layer 0 is the embedding itself,
so capture a copy of it.

Also shift the configured layer ids by one, so that "capture the output of
layer i" is what the draft model gets.
""",
        edits=(
            Edit(
                DEEPSEEK,
                """\
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
""",
                """\
            if i in self.layers_to_capture:
                if residual is None:
                    # Layer 0 has no residual yet: its input is the embedding itself.
                    aux_hidden_states.append(hidden_states.clone())
                else:
                    aux_hidden_states.append(hidden_states + residual)
""",
            ),
            Edit(
                DEEPSEEK,
                """\
            self.model.layers_to_capture = list(layer_ids)
""",
                """\
            # EAGLE-3 ids name the layer whose output is captured: the input of id + 1.
            self.model.layers_to_capture = [layer_id + 1 for layer_id in layer_ids]
""",
            ),
        ),
    ),
    Change(
        name="communicator-sm120.patch",
        tag="essential",
        date="Thu, 8 Jan 2026 09:00:00 +0000",
        subject="communicator: enable the fused all-reduce on SM120",
        probe=COMMUNICATOR_PROBE,
        body="""
The fork runs on eight RTX PRO 6000 Blackwell cards (compute capability
12.0) over PCIe. The fused all-reduce + residual + RMSNorm kernel is built
for SM120 too, but the allow-list only had SM90 and SM100, so every decoder
layer fell back to a separate all-reduce and norm. On this machine the
unfused path also trips a known hang in the custom all-reduce with CUDA
graphs, so the server does not come up without this patch.

Add 120 to the supported compute capabilities.
""",
        edits=(
            Edit(
                COMMUNICATOR,
                "_FUSED_ALLREDUCE_SM_VERSIONS = (90, 100)\n",
                "_FUSED_ALLREDUCE_SM_VERSIONS = (90, 100, 120)\n",
            ),
        ),
    ),
    Change(
        name="nccl-env-propagation.patch",
        tag="diagnostic",
        date="Fri, 9 Jan 2026 09:00:00 +0000",
        subject="engine: pass NCCL_* variables on to the scheduler processes",
        body="""
Scheduler processes start from an explicit, minimal environment, so
NCCL_DEBUG, NCCL_P2P_LEVEL, NCCL_IB_DISABLE and friends set in the launching
shell never reached NCCL. While chasing an all-reduce hang over PCIe we set
NCCL_DEBUG=INFO and got no NCCL output at all, which cost a day.

Pass every NCCL_* variable of the launcher through to the workers and log
which ones were passed. This is a diagnostic aid: it changes nothing unless
NCCL variables are set.
""",
        edits=(
            Edit(
                ENGINE,
                """\
_WORKER_ENV_PASSTHROUGH = ("PATH", "HOME", "PYTHONPATH", "SRT_LOG_LEVEL", "HF_HOME")
""",
                """\
_WORKER_ENV_PASSTHROUGH = ("PATH", "HOME", "PYTHONPATH", "SRT_LOG_LEVEL", "HF_HOME")
# Variables with these prefixes are passed through too: NCCL reads its settings from the
# environment of each worker, not from the launcher's.
_WORKER_ENV_PASSTHROUGH_PREFIXES = ("NCCL_",)
""",
            ),
            Edit(
                ENGINE,
                """\
    env = {name: os.environ[name] for name in _WORKER_ENV_PASSTHROUGH if name in os.environ}
""",
                """\
    env = {name: os.environ[name] for name in _WORKER_ENV_PASSTHROUGH if name in os.environ}
    # NCCL_* settings (NCCL_DEBUG, NCCL_P2P_LEVEL, ...) are meant for the workers; without
    # them a worker runs with NCCL defaults whatever the launching shell says.
    env.update(
        (name, value)
        for name, value in os.environ.items()
        if name.startswith(_WORKER_ENV_PASSTHROUGH_PREFIXES)
    )
""",
            ),
            Edit(
                ENGINE,
                """\
        dist_init_method = f"tcp://{args.dist_init_addr}"
""",
                """\
        dist_init_method = f"tcp://{args.dist_init_addr}"
        passed = sorted(k for k in os.environ if k.startswith(_WORKER_ENV_PASSTHROUGH_PREFIXES))
        logger.info("Passing to workers: %s", ", ".join(passed) or "no NCCL variables")
        if "NCCL_DEBUG" not in passed:
            logger.info("Set NCCL_DEBUG=INFO to see NCCL's own setup log in the workers.")
""",
            ),
        ),
    ),
    Change(
        name="nccl-diagnostic-logging.patch",
        tag="diagnostic",
        date="Sat, 10 Jan 2026 09:00:00 +0000",
        subject="scheduler: log the NCCL setup of each rank before init",
        body="""
When the tensor-parallel group hangs during init, the log only said which
rank started to initialize. Log the GPU, the rendezvous address and the
NCCL_* variables each rank actually sees, so that a rank with a different
NCCL configuration (or none, see nccl-env-propagation) stands out.

Diagnostic only; drop it for clean baseline measurements.
""",
        edits=(
            Edit(
                SCHEDULER,
                """\
        logger.info("Init torch distributed on tp_rank=%d.", self.tp_rank)
""",
                """\
        nccl_env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}
        logger.info(
            "Init torch distributed on tp_rank=%d gpu=%d via %s, NCCL env: %s.",
            self.tp_rank, self.gpu_id, self.dist_init_method, nccl_env or "(none)",
        )
""",
            ),
        ),
    ),
    Change(
        name="mla-kv-gather-then-cast.patch",
        tag="optimization",
        date="Sun, 11 Jan 2026 09:00:00 +0000",
        subject="flashinfer_mla: gather KV pages before casting to the query dtype",
        body="""
With an FP8 KV cache, forward_extend() and forward_decode() cast the whole
key buffer of the layer to the query dtype before every attention call.
That reads and writes every slot of the pool, on every layer, although the
batch only reads the slots listed in its page table. With a large pool this
cast was the largest single item in a decode step.

Gather the batch's slots first and cast only those; the gathered rows are
then addressed by 0 .. len(kv_indices) - 1, so plan() gets a compact page
table. SRT_MLA_GATHER_THEN_CAST=0 restores the old path for comparison.
""",
        edits=(
            Edit(
                MLA,
                """\
import torch

""",
                """\
import torch
from srt.utils import get_bool_env_var

""",
            ),
            Edit(
                MLA,
                """\
logger = logging.getLogger(__name__)
""",
                """\
logger = logging.getLogger(__name__)

# Gather the pages a batch reads before casting the KV cache to the query dtype.
_GATHER_THEN_CAST = get_bool_env_var("SRT_MLA_GATHER_THEN_CAST", "true")
""",
            ),
            Edit(
                MLA,
                """\
    def _plan(self, q: torch.Tensor, kv_dtype: torch.dtype, causal: bool) -> None:
        meta = self.forward_metadata
        self.decode_wrapper.plan(
            meta.qo_indptr,
            meta.kv_indptr,
            meta.kv_indices,
""",
                """\
    def _plan(
        self,
        q: torch.Tensor,
        kv_dtype: torch.dtype,
        causal: bool,
        kv_indices: torch.Tensor | None = None,
    ) -> None:
        meta = self.forward_metadata
        self.decode_wrapper.plan(
            meta.qo_indptr,
            meta.kv_indptr,
            meta.kv_indices if kv_indices is None else kv_indices,
""",
            ),
            Edit(
                MLA,
                """\
            kv_dtype,
        )

""",
                """\
            kv_dtype,
        )

    def _kv_in_dtype(
        self, k_buffer: torch.Tensor, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        \"\"\"The KV cache in ``dtype`` and the page indices to read it with.

        Gathers the batch's slots first and casts only those: casting the whole pool reads
        and writes every slot of the cache on every layer, while a batch reads only the slots
        in its page table.  The gathered rows are addressed by ``0 .. len(kv_indices) - 1``.
        Returns ``None`` as indices when the page table of the forward metadata still applies.
        \"\"\"
        if k_buffer.dtype == dtype:
            return k_buffer, None
        if not _GATHER_THEN_CAST:
            return k_buffer.to(dtype), None
        kv_indices = self.forward_metadata.kv_indices
        gathered = k_buffer.index_select(0, kv_indices.long()).to(dtype)
        compact = torch.arange(kv_indices.numel(), dtype=kv_indices.dtype, device=self.device)
        return gathered, compact

""",
            ),
            Edit(
                MLA,
                """\
        k_buffer = pool.get_key_buffer(layer.layer_id).to(q.dtype)
        self._plan(q, k_buffer.dtype, causal=True)
""",
                """\
        k_buffer, kv_indices = self._kv_in_dtype(pool.get_key_buffer(layer.layer_id), q.dtype)
        self._plan(q, k_buffer.dtype, causal=True, kv_indices=kv_indices)
""",
            ),
            Edit(
                MLA,
                """\
        k_buffer = pool.get_key_buffer(layer.layer_id).to(q.dtype)
        self._plan(q, k_buffer.dtype, causal=False)
""",
                """\
        k_buffer, kv_indices = self._kv_in_dtype(pool.get_key_buffer(layer.layer_id), q.dtype)
        self._plan(q, k_buffer.dtype, causal=False, kv_indices=kv_indices)
""",
            ),
        ),
    ),
    Change(
        name="oea-routing.patch",
        tag="optimization, moe",
        date="Mon, 12 Jan 2026 09:00:00 +0000",
        subject="topk: add Opportunistic Expert Activation routing for decode",
        body="""
In a small decode batch almost every token routes to a different set of
experts, so a MoE layer reads the weights of up to batch * top_k experts and
decode is bound by that memory traffic. Opportunistic Expert Activation
(OEA) keeps each token's best experts as routed and fills the remaining
top-k slots preferring, among the token's best candidates, experts that
another token in the batch activates anyway. Where no candidate is shared
the token keeps its own next-best expert, so routing only changes where it
saves an expert load; the token's total routing weight is preserved.

Off by default; enable per layer with TopKConfig(enable_oea=True,
oea_num_candidates=N). Applies only to batches of at most oea_max_tokens
tokens, i.e. decode.
""",
        edits=(
            Edit(
                TOPK,
                """\
    correction_bias: torch.Tensor | None = None

""",
                """\
    correction_bias: torch.Tensor | None = None
    # Opportunistic Expert Activation, see opportunistic_expert_activation().
    enable_oea: bool = False
    oea_num_candidates: int = 0
    oea_max_tokens: int = 64
    oea_num_primary: int | None = None

    def __post_init__(self) -> None:
        if not self.enable_oea:
            return
        if self.oea_num_candidates <= self.top_k:
            raise ValueError(
                f"oea_num_candidates ({self.oea_num_candidates}) must exceed top_k ({self.top_k})"
            )
        if self.oea_max_tokens < 1:
            raise ValueError(f"oea_max_tokens must be positive, got {self.oea_max_tokens}")

""",
            ),
            Edit(
                TOPK,
                """\
    return topk_weights, topk_ids.to(torch.int32)


def select_experts(
""",
                """\
    return topk_weights, topk_ids.to(torch.int32)


def count_activated_experts(topk_ids: torch.Tensor) -> int:
    \"\"\"How many distinct experts a batch routed as ``topk_ids`` reads from memory.\"\"\"
    return int(topk_ids.unique().numel())


def opportunistic_expert_activation(
    router_logits: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    num_candidates: int,
    num_primary: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"Re-route the lower-ranked choices of each token to experts the batch loads anyway.

    Every token keeps its ``num_primary`` best experts (default: half of top-k).  The other
    slots are filled from the token's ``num_candidates`` best experts, preferring experts
    that some token of the batch activates through its primary choices, and otherwise in
    the token's own order.  ``topk_ids`` must be sorted best first, as fused_topk() and
    grouped_topk() return them.  Returns weights and ids of the same shapes and dtypes;
    each token's total weight is unchanged.

    Example: top_k=8, num_primary=4, num_candidates=12.  Token A keeps its 4 best experts.
    Its 6th-best expert is a primary expert of token B and its 9th-best one of token C, so
    A takes those two instead of its own 5th- and 7th-best, and fills the two slots left
    with its 5th- and 7th-best as before.  The batch then loads two experts fewer for A.
    Decode quality depends on how far down the candidate list substitutes may come from;
    num_candidates = top_k + top_k // 2 was neutral on our evaluation set.
    \"\"\"
    num_tokens, top_k = topk_ids.shape
    num_experts = router_logits.shape[-1]
    if num_primary is None:
        num_primary = max(1, top_k // 2)
    num_candidates = min(num_candidates, num_experts)
    if num_tokens == 0 or num_primary >= top_k or num_candidates <= top_k:
        return topk_weights, topk_ids

    # Experts the batch activates whatever the substitutes are.
    primary_ids = topk_ids[:, :num_primary].long()
    active = torch.zeros(num_experts, dtype=torch.bool, device=router_logits.device)
    active[primary_ids.reshape(-1)] = True

    # Each token's candidates, best first; its primary experts are not candidates.
    scores = torch.softmax(router_logits.float(), dim=-1)
    cand_scores, cand_ids = torch.topk(scores, k=num_candidates, dim=-1, sorted=True)
    is_primary = (cand_ids.unsqueeze(-1) == primary_ids.unsqueeze(1)).any(dim=-1)

    # Shared experts first, then the token's own preference; primaries last.
    rank = torch.arange(num_candidates, device=router_logits.device).expand_as(cand_ids)
    key = rank + num_candidates * (~active[cand_ids]).long()
    key = key.masked_fill(is_primary, 2 * num_candidates)
    order = torch.topk(key, k=top_k - num_primary, dim=-1, largest=False, sorted=True).indices
    fill_ids = cand_ids.gather(1, order)
    fill_weights = cand_scores.gather(1, order).to(topk_weights.dtype)

    new_weights = torch.cat([topk_weights[:, :num_primary], fill_weights], dim=-1)
    total = topk_weights.sum(dim=-1, keepdim=True)
    new_weights = new_weights * (total / new_weights.sum(dim=-1, keepdim=True))
    new_ids = torch.cat([primary_ids, fill_ids], dim=-1).to(topk_ids.dtype)
    if logger.isEnabledFor(logging.DEBUG):
        before, after = count_activated_experts(topk_ids), count_activated_experts(new_ids)
        logger.debug("OEA: %d tokens use %d experts instead of %d", num_tokens, after, before)
    return new_weights, new_ids


def select_experts(
""",
            ),
            Edit(
                TOPK,
                """\
    if config.routed_scaling_factor is not None:
""",
                """\
    if config.enable_oea and 0 < router_logits.shape[0] <= config.oea_max_tokens:
        topk_weights, topk_ids = opportunistic_expert_activation(
            router_logits,
            topk_weights,
            topk_ids,
            config.oea_num_candidates,
            config.oea_num_primary,
        )
    if config.routed_scaling_factor is not None:
""",
            ),
            Edit(
                TOPK,
                """\
        return select_experts(hidden_states, router_logits, self.config)
""",
                """\
        return select_experts(hidden_states, router_logits, self.config)

    def extra_repr(self) -> str:
        cfg = self.config
        oea = f", oea(candidates={cfg.oea_num_candidates})" if cfg.enable_oea else ""
        return f"top_k={cfg.top_k}, grouped={cfg.use_grouped_topk}{oea}"
""",
            ),
        ),
    ),
)


# --------------------------------------------------------------------------------------------
# The upstream pull: four later upstream commits, applied in order with ``git am``.
# ``claim`` names what each one demonstrates when the series is replayed on top:
#   conflict  - edits the very lines nccl-diagnostic-logging edits (a real conflict)
#   merge     - edits a line inside deepseek-v2-eagle3-capture's context (three-way merge)
#   offset    - adds lines at the top of topk.py, far from oea-routing's hunks (offset only)
#   unrelated - touches only files that no patch touches

PULL: tuple[Change, ...] = (
    Change(
        name="0001-utils-add-get_float_env_var-and-document-it.patch",
        claim="unrelated",
        date="Tue, 20 Jan 2026 14:30:00 +0000",
        subject="utils: add get_float_env_var and document float settings",
        body="""
Timeouts and memory fractions are floats; reading them with int() or by hand
in every module led to inconsistent handling of empty values. Add a helper
next to get_int_env_var and list SRT_DIST_TIMEOUT in the README.
""",
        edits=(
            Edit(
                "srt/utils.py",
                """\
def ceil_div(a: int, b: int) -> int:
""",
                """\
def get_float_env_var(name: str, default: float = 0.0) -> float:
    \"\"\"Read an environment variable as a float, falling back to ``default``.\"\"\"
    value = os.getenv(name)
    if value is None or value.strip() == "":
        return default
    try:
        return float(value)
    except ValueError:
        logger.warning("Ignoring non-numeric value %r for %s", value, name)
        return default


def ceil_div(a: int, b: int) -> int:
""",
            ),
            Edit(
                "README.md",
                """\
| `SRT_DISABLE_CUDA_GRAPH` | run decode without CUDA graphs |
""",
                """\
| `SRT_DISABLE_CUDA_GRAPH` | run decode without CUDA graphs |
| `SRT_DIST_TIMEOUT` | seconds to wait for the tensor-parallel group to form (float) |
""",
            ),
        ),
    ),
    Change(
        name="0002-deepseek_v2-annotate-the-aux-hidden-state-list.patch",
        claim="merge",
        date="Tue, 27 Jan 2026 11:15:00 +0000",
        subject="deepseek_v2: annotate the aux hidden-state list",
        body="""
The list of captured hidden states was an unannotated [] and type checkers
inferred list[Never] for it. Annotate it; no behaviour change.
""",
        edits=(
            Edit(
                DEEPSEEK,
                """\
        aux_hidden_states = []
""",
                """\
        aux_hidden_states: list[torch.Tensor] = []
""",
            ),
        ),
    ),
    Change(
        name="0003-topk-expose-MAX_TOPK.patch",
        claim="offset",
        date="Tue, 3 Feb 2026 16:45:00 +0000",
        subject="topk: expose MAX_TOPK",
        body="""
Model configs validate num_experts_per_tok against the largest top-k the
routing kernels are compiled for; give that limit a name in this module
and mention the TopK module in the module docstring.
""",
        edits=(
            Edit(
                TOPK,
                """\
which first restricts every token to its best ``topk_group`` groups of experts.
\"\"\"
""",
                """\
which first restricts every token to its best ``topk_group`` groups of experts.

MoE layers hold their routing configuration in a ``TopK`` module (end of this file).
\"\"\"
""",
            ),
            Edit(
                TOPK,
                """\
logger = logging.getLogger(__name__)
""",
                """\
logger = logging.getLogger(__name__)

# Largest number of experts per token the routing kernels are compiled for.
MAX_TOPK = 16
""",
            ),
        ),
    ),
    Change(
        name="0004-scheduler-initialize-the-TP-group-through-init_tp_group.patch",
        claim="conflict",
        date="Tue, 10 Feb 2026 10:00:00 +0000",
        subject="scheduler: initialize the TP group through init_tp_group",
        body="""
NCCL initialization is now done by srt.distributed.init_tp_group(), which
creates the process group and returns it, and takes its backend and
timeout from the server arguments instead of hard-coding "nccl" and the
default timeout. Log the group shape instead of only the rank.
""",
        edits=(
            Edit(
                SCHEDULER,
                """\
from srt.distributed import get_tp_group, init_distributed_environment
""",
                """\
from srt.distributed import init_tp_group
""",
            ),
            Edit(
                SCHEDULER,
                """\
        logger.info("Init torch distributed on tp_rank=%d.", self.tp_rank)
        init_distributed_environment(
            backend="nccl",
            world_size=self.tp_size,
            rank=self.tp_rank,
            local_rank=self.gpu_id,
            distributed_init_method=self.dist_init_method,
        )
        self.tp_group = get_tp_group()
""",
                """\
        logger.info("Init TP group %d/%d on gpu %d.", self.tp_rank, self.tp_size, self.gpu_id)
        self.tp_group = init_tp_group(
            backend=self.server_args.dist_backend,
            world_size=self.tp_size,
            rank=self.tp_rank,
            local_rank=self.gpu_id,
            init_method=self.dist_init_method,
            timeout_s=self.server_args.dist_timeout,
        )
""",
            ),
        ),
    ),
)


# A later upstream commit, after the refresh: it merges cleanly with communicator-sm120.patch
# and makes it needless (its probe passes without it), which only 'check --probes' notices.
LATER: tuple[Change, ...] = (
    Change(
        name="0005-communicator-allow-the-fused-all-reduce-from-SM90-up.patch",
        claim="absorbs",
        date="Tue, 17 Feb 2026 10:00:00 +0000",
        subject="communicator: allow the fused all-reduce on every SM from 90 up",
        body="""
The fused all-reduce + RMSNorm kernel is built for every compute capability
from SM90 on; listing them one by one left each new GPU generation on the
slow path until someone added it. Compare against the oldest one instead.
""",
        edits=(
            Edit(
                COMMUNICATOR,
                "    return get_device_sm() in _FUSED_ALLREDUCE_SM_VERSIONS\n",
                "    return get_device_sm() >= min(_FUSED_ALLREDUCE_SM_VERSIONS)\n",
            ),
        ),
    ),
)


# --------------------------------------------------------------------------------------------
# git plumbing


def sealed_env(home: Path, ident: tuple[str, str] | None = None, date: str = "") -> dict:
    """An environment that isolates git from user and system configuration."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LC_ALL": "C",
        "TZ": "UTC",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }
    if ident is not None:
        name, email = ident
        env.update(
            GIT_AUTHOR_NAME=name,
            GIT_AUTHOR_EMAIL=email,
            GIT_COMMITTER_NAME=name,
            GIT_COMMITTER_EMAIL=email,
        )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


class Git:
    """Runs git in one repository with a sealed environment."""

    def __init__(self, repo: Path, home: Path):
        self.repo = repo
        self.home = home

    def run(
        self,
        *args: str,
        ident: tuple[str, str] | None = None,
        date: str = "",
        stdin: bytes | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.repo,
            env=sealed_env(self.home, ident, date),
            input=stdin,
            capture_output=True,
        )
        if check and proc.returncode != 0:
            raise ExampleError(
                f"git {' '.join(args)} failed ({proc.returncode}):\n"
                + proc.stderr.decode(errors="replace")
            )
        return proc

    def out(self, *args: str, **kwargs) -> str:
        return self.run(*args, **kwargs).stdout.decode().strip()


def copy_upstream_tree(dest: Path) -> None:
    """Copy series/upstream/ into ``dest`` (skipping Python caches)."""
    for src in sorted(UPSTREAM_DIR.rglob("*")):
        rel = src.relative_to(UPSTREAM_DIR)
        if "__pycache__" in rel.parts or src.suffix == ".pyc" or not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(src.read_bytes())
        target.chmod(0o644)


def make_base_repo(repo: Path, home: Path) -> tuple[Git, str]:
    """Recipe step 1: a repository whose main branch is the base commit."""
    repo.mkdir(parents=True)
    git = Git(repo, home)
    git.run("init", "-q", "-b", "main")
    copy_upstream_tree(repo)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", BASE_MESSAGE, ident=UPSTREAM_IDENT, date=BASE_DATE)
    return git, git.out("rev-parse", "HEAD")


def apply_edits(repo: Path, change: Change) -> None:
    for edit in change.edits:
        path = repo / edit.path
        text = path.read_text()
        count = text.count(edit.old)
        if count != 1:
            raise ExampleError(
                f"{change.name}: expected exactly one occurrence of the snippet to replace in "
                f"{edit.path}, found {count}:\n{edit.old}"
            )
        path.write_text(text.replace(edit.old, edit.new))


def commit_change(git: Git, change: Change, ident: tuple[str, str]) -> str:
    apply_edits(git.repo, change)
    git.run("add", "-A")
    git.run("commit", "-q", "-F", "-", stdin=change.message.encode(), ident=ident, date=change.date)
    return git.out("rev-parse", "HEAD")


def series_text(base: str) -> str:
    lines = [SERIES_DESCRIPTION, f"# base: {base} {UPSTREAM_REF}"]
    lines += [f"{p.name} # {p.tag}" for p in PATCHES]
    return "\n".join(lines) + "\n"


@dataclass
class Generated:
    base: str
    patch_commits: list[str]
    pull_commits: list[str]
    files: dict[str, bytes]  # path relative to series/ -> content


def generate(work: Path) -> Generated:
    """Build the example in ``work`` and return the files it consists of."""
    git, base = make_base_repo(work / "gen", work)
    files: dict[str, bytes] = {}
    patch_commits = []
    for change in PATCHES:
        commit = commit_change(git, change, FORK_IDENT)
        patch_commits.append(commit)
        files[f"patches/{change.name}"] = git.run(*FORMAT_PATCH_ARGS, commit).stdout
    files["patches/series"] = series_text(base).encode()
    git.run("checkout", "-q", "-b", "upstream", base)
    pull_commits = []
    for change in PULL:
        commit = commit_change(git, change, UPSTREAM_IDENT)
        pull_commits.append(commit)
        files[f"upstream-pull/{change.name}"] = git.run(*FORMAT_PATCH_ARGS, commit).stdout
    for change in LATER:
        commit = commit_change(git, change, UPSTREAM_IDENT)
        pull_commits.append(commit)
        files[f"upstream-later/{change.name}"] = git.run(*FORMAT_PATCH_ARGS, commit).stdout
    return Generated(base, patch_commits, pull_commits, files)


# --------------------------------------------------------------------------------------------
# verification

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def old_hunks(diff: str) -> list[tuple[int, int]]:
    """(start, count) of the pre-image side of every hunk of a unified diff."""
    return [(int(m[1]), int(m[2]) if m[2] is not None else 1) for m in HUNK_RE.finditer(diff)]


def changed_old_lines(diff_u0: str) -> set[int]:
    """Pre-image line numbers removed or replaced by a ``-U0`` diff."""
    lines: set[int] = set()
    for start, count in old_hunks(diff_u0):
        lines.update(range(start, start + count))
    return lines


def insertion_points(diff_u0: str) -> list[int]:
    """For pure insertions of a ``-U0`` diff: the pre-image line they follow."""
    return [start for start, count in old_hunks(diff_u0) if count == 0]


class Report:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def ok(self, cond: bool, what: str) -> bool:
        print(f"  [{'ok' if cond else 'FAIL'}] {what}")
        if not cond:
            self.failures.append(what)
        return cond


def tree_files(git: Git, rev: str) -> dict[str, bytes]:
    names = git.out("ls-tree", "-r", "--name-only", rev).splitlines()
    return {n: git.run("show", f"{rev}:{n}").stdout for n in names}


def verify(gen: Generated, series_dir: Path, work: Path, use_quilt: bool) -> Report:
    """Check the recipe and the upstream-pull claims against the files in ``series_dir``."""
    rep = Report()
    patch_files = [series_dir / "patches" / p.name for p in PATCHES]
    pull_files = [series_dir / "upstream-pull" / c.name for c in PULL]

    print("recipe:")
    git, base = make_base_repo(work / "am", work)
    rep.ok(base == gen.base, f"base commit is {base}")
    series_file = (series_dir / "patches" / "series").read_text()
    series_base = re.search(r"^# base: ([0-9a-f]{40}) ", series_file, re.M)
    rep.ok(series_base is not None and series_base[1] == base, "series file names that base")
    git.run("am", "-q", "--committer-date-is-author-date", *map(str, patch_files), ident=FORK_IDENT)
    commits = git.out("rev-list", "--reverse", f"{base}..HEAD").splitlines()
    rep.ok(
        commits == gen.patch_commits,
        f"git am of the 7 patches gives the same 7 commits (top {commits[-1][:12]})",
    )
    fork_tip = commits[-1]

    if use_quilt:
        quilt = shutil.which("quilt")
        if rep.ok(quilt is not None, "quilt is installed (apt-get install -y quilt)"):
            qdir = work / "quilt"
            qdir.mkdir()
            copy_upstream_tree(qdir)
            env = sealed_env(work)
            env.update(QUILT_PATCHES=str(series_dir / "patches"), QUILT_PC=".pc")
            proc = subprocess.run(
                [quilt, "--quiltrc", "-", "push", "-a", "--fuzz=0"],
                cwd=qdir,
                env=env,
                capture_output=True,
                text=True,
            )
            out = proc.stdout + proc.stderr
            rep.ok(
                proc.returncode == 0 and out.count("Applying patch") == len(PATCHES),
                "quilt push -a --fuzz=0 applies all 7 patches",
            )
            rep.ok(
                "offset" not in out and "fuzz" not in out.replace("--fuzz", ""),
                "quilt applies every hunk exactly (no offset, no fuzz)",
            )
            got = {
                str(p.relative_to(qdir)): p.read_bytes()
                for p in qdir.rglob("*")
                if p.is_file() and ".pc" not in p.relative_to(qdir).parts
            }
            rep.ok(got == tree_files(git, fork_tip), "quilt result equals the git am result")
            if proc.returncode != 0:
                print(out)
    else:
        print("  [skip] quilt (--no-quilt)")

    print("upstream pull:")
    git.run("checkout", "-q", "-b", "pulled", base)
    git.run(
        "am", "-q", "--committer-date-is-author-date", *map(str, pull_files), ident=UPSTREAM_IDENT
    )
    pulled = git.out("rev-list", "--reverse", f"{base}..pulled").splitlines()
    rep.ok(
        pulled == gen.pull_commits[: len(PULL)],
        f"git am of the 4 upstream-pull patches gives the same commits (top {pulled[-1][:12]})",
    )
    pulled_tip = pulled[-1]

    parents = [base, *gen.patch_commits]
    patched_files = {p.edits[0].path for p in PATCHES}
    for change in PATCHES:
        rep.ok(
            {e.path for e in change.edits} == {change.edits[0].path},
            f"{change.name} touches one file",
        )

    def patch_index(name: str) -> int:
        return next(i for i, p in enumerate(PATCHES) if p.name == name)

    def file_diff(a: str, b: str, path: str, context: int) -> str:
        return git.out("diff", f"-U{context}", a, b, "--", path)

    def same_blob(a: str, b: str, path: str) -> bool:
        return git.out("rev-parse", f"{a}:{path}") == git.out("rev-parse", f"{b}:{path}")

    def on_pulled(action: list[str]) -> subprocess.CompletedProcess:
        """Run ``git <action>`` on a clean checkout of the pulled base."""
        git.run("checkout", "-q", "-f", "--detach", pulled_tip)
        return git.run(*action, check=False, ident=FORK_IDENT)

    def cleanup() -> None:
        git.run("cherry-pick", "--abort", check=False)
        git.run("reset", "-q", "--hard", pulled_tip)
        git.run("clean", "-qfd")

    for change, commit in zip(PULL, gen.pull_commits[: len(PULL)], strict=True):
        touched = set(
            git.out("diff-tree", "--no-commit-id", "--name-only", "-r", commit).splitlines()
        )
        parent = f"{commit}^"
        print(f"  {change.name} [{change.claim}]: touches {', '.join(sorted(touched))}")
        if change.claim == "unrelated":
            rep.ok(not touched & patched_files, "(d) touches no file that any patch touches")
            continue
        (path,) = touched
        owner = next(p for p in PATCHES if p.edits[0].path == path)
        i = patch_index(owner.name)
        pfile = str(series_dir / "patches" / owner.name)
        prev, pcommit = parents[i], gen.patch_commits[i]
        rep.ok(
            same_blob(parent, base, path) and same_blob(prev, base, path),
            f"upstream commit and {owner.name} both start from the base {path}",
        )
        up_lines = changed_old_lines(file_diff(parent, commit, path, 0))
        up_inserts = insertion_points(file_diff(parent, commit, path, 0))
        patch_lines = changed_old_lines(file_diff(prev, pcommit, path, 0))
        hunks = old_hunks(file_diff(prev, pcommit, path, 3))
        in_hunk = {n for s, c in hunks for n in range(s, s + c)}
        check = on_pulled(["apply", "--check", "-v", pfile])
        check_out = check.stdout.decode() + check.stderr.decode()
        cleanup()
        pick = on_pulled(["cherry-pick", pcommit])
        pick_out = pick.stdout.decode() + pick.stderr.decode()
        unmerged = git.out("diff", "--name-only", "--diff-filter=U")
        cleanup()
        three = on_pulled(["apply", "--3way", pfile])
        three_out = three.stdout.decode() + three.stderr.decode()
        cleanup()
        if change.claim == "conflict":
            overlap = sorted(up_lines & patch_lines)
            rep.ok(bool(overlap), f"(a) both edit base {path} line(s) {overlap}")
            rep.ok(check.returncode != 0, f"(a) git apply --check {owner.name} fails")
            rep.ok(
                pick.returncode != 0 and unmerged == path,
                f"(a) cherry-pick of {owner.name} onto the pulled base: CONFLICT in {unmerged}",
            )
            rep.ok(
                three.returncode != 0 and "with conflicts" in three_out,
                f"(a) git apply --3way {owner.name}: applied with conflicts",
            )
        elif change.claim == "merge":
            near = sorted(up_lines & in_hunk)
            rep.ok(
                not up_lines & patch_lines,
                f"(b) upstream edits base line(s) {sorted(up_lines)}, "
                f"none of the lines {owner.name} edits {sorted(patch_lines)}",
            )
            rep.ok(bool(near), f"(b) ... but line(s) {near} are context of its hunks {hunks}")
            rep.ok(check.returncode != 0, f"(b) git apply --check {owner.name} fails")
            if not rep.ok(
                pick.returncode == 0 and not unmerged,
                f"(b) cherry-pick of {owner.name} onto the pulled base merges cleanly",
            ):
                print(pick_out)
            rep.ok(
                three.returncode == 0 and "cleanly" in three_out,
                f"(b) git apply --3way {owner.name}: applied cleanly",
            )
        elif change.claim == "offset":
            far = all(not s - 1 <= a < s + c for a in up_inserts for s, c in hunks)
            rep.ok(
                not up_lines and bool(up_inserts) and far,
                f"(c) upstream only inserts after base line(s) {up_inserts}, "
                f"outside {owner.name}'s hunks {hunks}",
            )
            offsets = re.findall(r"Hunk #\d+ succeeded at \d+ \(offset -?\d+ lines?\)", check_out)
            rep.ok(
                check.returncode == 0 and len(offsets) == len(hunks),
                f"(c) git apply --check {owner.name} succeeds, every hunk by offset: "
                + "; ".join(offsets),
            )
            if not rep.ok(pick.returncode == 0, f"(c) cherry-pick of {owner.name} is clean"):
                print(pick_out)
        else:
            raise ExampleError(f"{change.name}: unknown claim {change.claim!r}")

    print("every patch on the pulled base (git apply --check, else --3way):")
    expected = {
        "deepseek-v2-eagle3-capture.patch": "three-way merge",
        "nccl-diagnostic-logging.patch": "CONFLICT",
        "oea-routing.patch": "applies with offset",
    }
    for change in PATCHES:
        pfile = str(series_dir / "patches" / change.name)
        check = on_pulled(["apply", "--check", "-v", pfile])
        text = check.stdout.decode() + check.stderr.decode()
        if check.returncode == 0:
            verdict = "applies with offset" if "offset" in text else "applies exactly"
        else:
            cleanup()
            three = on_pulled(["apply", "--3way", pfile])
            verdict = "three-way merge" if three.returncode == 0 else "CONFLICT"
        cleanup()
        rep.ok(verdict == expected.get(change.name, "applies exactly"), f"{change.name}: {verdict}")
    verify_probes(git, gen, series_dir, rep)
    return rep


def run_probe(git: Git, rev: str, probe: str) -> int:
    """The exit status of ``probe`` run by sh at the top of a clean checkout of ``rev``."""
    git.run("checkout", "-q", "-f", "--detach", rev)
    git.run("clean", "-qfdx")
    proc = subprocess.run(
        ["sh", "-c", probe], cwd=git.repo, env=sealed_env(git.home), capture_output=True
    )
    return proc.returncode


def verify_probes(git: Git, gen: Generated, series_dir: Path, rep: Report) -> None:
    """Each probe passes with its patch and fails without it; the later upstream commit
    merges cleanly with communicator-sm120.patch and its probe then passes without it."""
    print("probes:")
    parents = [gen.base, *gen.patch_commits]
    for i, change in enumerate(PATCHES):
        if not change.probe:
            continue
        with_it = run_probe(git, parents[i + 1], change.probe)
        without = run_probe(git, parents[i], change.probe)
        rep.ok(
            with_it == 0 and without != 0,
            f"{change.name}'s probe passes with it (exit {with_it}) and fails without (exit"
            f" {without})",
        )
    print("upstream later:")
    git.run("checkout", "-q", "-f", "-B", "later", gen.pull_commits[len(PULL) - 1])
    later_files = [series_dir / "upstream-later" / c.name for c in LATER]
    git.run(
        "am", "-q", "--committer-date-is-author-date", *map(str, later_files), ident=UPSTREAM_IDENT
    )
    later = git.out("rev-list", "--reverse", f"{gen.pull_commits[len(PULL) - 1]}..later")
    rep.ok(
        later.splitlines() == gen.pull_commits[len(PULL) :],
        f"git am of the later upstream commit gives the same commit ({later[:12]})",
    )
    i = next(i for i, p in enumerate(PATCHES) if p.name == "communicator-sm120.patch")
    pick = git.run("cherry-pick", gen.patch_commits[i], check=False, ident=FORK_IDENT)
    rep.ok(pick.returncode == 0, "(e) cherry-pick of communicator-sm120.patch onto it is clean")
    picked = git.out("rev-parse", "HEAD")
    git.run("cherry-pick", "--abort", check=False)
    with_it = run_probe(git, picked, PATCHES[i].probe)
    without = run_probe(git, "later", PATCHES[i].probe)
    rep.ok(
        with_it == 0 and without == 0,
        "(e) ... and its probe passes with it and without it: ineffective",
    )


# --------------------------------------------------------------------------------------------
# main


def committed_files() -> dict[str, bytes]:
    files = {}
    for folder in ("patches", "upstream-pull", "upstream-later"):
        for path in sorted((SERIES_DIR / folder).glob("*")):
            if path.is_file() and (path.suffix == ".patch" or path.name == "series"):
                files[f"{folder}/{path.name}"] = path.read_bytes()
    return files


def differences(want: dict[str, bytes], have: dict[str, bytes]) -> list[str]:
    out = []
    for name in sorted(want.keys() | have.keys()):
        if name not in have:
            out.append(f"series/{name}: missing")
        elif name not in want:
            out.append(f"series/{name}: not generated by this script (stale?)")
        elif want[name] != have[name]:
            diff = difflib.unified_diff(
                have[name].decode(errors="replace").splitlines(),
                want[name].decode(errors="replace").splitlines(),
                f"committed/series/{name}",
                f"generated/series/{name}",
                lineterm="",
                n=1,
            )
            out.append(f"series/{name}: differs\n" + "\n".join(list(diff)[:40]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="verify that the committed files are what this script generates",
    )
    parser.add_argument("--no-quilt", action="store_true", help="skip the quilt verification")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="make_example.") as tmp:
        work = Path(tmp)
        try:
            gen = generate(work)
            out_dir = work / "series"
            for name, data in gen.files.items():
                (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
                (out_dir / name).write_bytes(data)
            print(f"base: {gen.base} {UPSTREAM_REF}")
            rep = verify(gen, out_dir, work, use_quilt=not args.no_quilt)
        except ExampleError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if rep.failures:
        print(f"{len(rep.failures)} verification(s) failed; nothing written.", file=sys.stderr)
        return 1

    diffs = differences(gen.files, committed_files())
    if args.check:
        if diffs:
            print("committed files differ from what tools/make_example.py generates:")
            for d in diffs:
                print(d)
            return 1
        print(f"ok: {len(gen.files)} generated files match the committed ones")
        return 0
    for name in (n for n in committed_files() if n not in gen.files):
        (SERIES_DIR / name).unlink()
    for name, data in gen.files.items():
        path = SERIES_DIR / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    print(f"wrote {len(diffs)} changed file(s); {len(gen.files)} generated files are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
