"""Run configuration: nested dataclasses, validated once at the edge, logged whole.

A run is fully described by a :class:`RunConfig`. Every field can be overridden on the command
line by its dotted name (``--set train.batch_size=32``) or from a TOML file; values are
type-checked against the dataclass annotations and errors name the field and what is allowed.
"""

from __future__ import annotations

import copy
import difflib
import dataclasses
import json
import math
import tomllib
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from ihstats.base.contract import FORMED_LEVEL
from ihstats.base.ids import cell_hash, config_hash
from ihtrain.config_checks import is_plain_name, validate
from ihtrain.data.registry import default_source, recorded_sections, registered_section
from ihtrain.errors import ConfigError
from ihtrain.presets import RUN_PRESETS, preset_names


def flops_per_token(n_matmul_params: int, n_layer: int, d_attn: int, context: int) -> float:
    """Training FLOPs per token, ``6 N + 12 L d T`` (PaLM appendix B, as nanoGPT): ``N`` weights
    that do matmuls, and attention scores and mixing over a context of ``T``."""
    return 6 * n_matmul_params + 12 * n_layer * d_attn * context


@dataclass
class ModelConfig:
    """GPT-2-style decoder. ``vocab_size = 0`` means: take it from the data source."""

    n_layer: int = 2
    n_head: int = 4
    d_model: int = 128
    vocab_size: int = 0
    context: int = 128  # the model's maximum context (positions); train.context <= this
    attn_only: bool = False  # attention-only blocks (no MLP), as in Olsson et al.
    tie_embeddings: bool = True
    mlp_ratio: int = 4
    dropout: float = 0.0
    bias: bool = True


@dataclass
class DataConfig:
    """Where tokens come from.

    ``source`` names a registered source (:mod:`ihtrain.data.registry`; ``usage()`` lists them).
    Each source module declares its own config section (its dataclass, ranges and factors) and
    registers it; ``data.NAME`` reads section ``NAME`` from :attr:`sections`. A registered wrapper
    (Bi-Induct) wraps whichever source is built.
    """

    source: str = field(default_factory=default_source)  # the natural source: the shipped corpus
    tokenizer: str = "bpe"  # "bpe" (trained on the corpus, cached) or "pretrained:NAME_OR_PATH"
    vocab_size: int = 512  # BPE vocabulary size (natural sources)
    max_corpus_chars: int = 0  # 0: whole corpus; else truncate (deterministically) for speed
    val_fraction: float = 0.01
    cache_dir: str = ""  # "" -> $IHLAW_CACHE or ~/.cache/ihlaw
    # the sources' sections (ihtrain.data.registry), by name: ``data.NAME`` reads them and
    # config.json holds them beside the fields above. The recorded ones (the shipped sources') are
    # in every config; another source's only when set or selected, so a registered source changes
    # no other run's config.json or run_id
    sections: dict[str, Any] = field(default_factory=recorded_sections, metadata={"registry": True})

    def __getattr__(self, name: str) -> Any:  # only for names that are not fields: a registered section
        sections = self.__dict__.get("sections")
        src = registered_section(name) if sections is not None and not name.startswith("__") else None
        if src is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return sections.setdefault(name, src.config())


@dataclass
class TrainConfig:
    batch_size: int = 16  # B: effective sequences per optimizer update
    micro_batch_size: int = 0  # 0: = batch_size; accumulation steps = batch_size / micro
    context: int = 128  # C: training sequence length
    budget: Literal["steps", "tokens", "until-emergence"] = "steps"
    max_steps: int = 2000  # used by budget=steps, and as the cap for until-emergence
    max_tokens: int = 0  # used by budget=tokens; until-emergence: a token cap besides max_steps (0: none)
    emergence_threshold: float = FORMED_LEVEL  # the run's formed level (contract.formed_level): the crossing that starts the until-emergence margin, and the general score a certified head reaches
    emergence_margin: float = 1.0  # ... then keep going for margin x the crossing step
    emergence_metric: Literal["ps", "ps_indist", "ps_gen"] = "ps"  # the PS whose crossing and onset the budget watches (ps_gen: the certificate's general score)
    lr: float = 3e-3
    schedule: Literal["cosine", "constant", "wsd"] = "cosine"  # wsd: warmup, stable, linear decay
    warmup_steps: int = 0  # 0: use warmup_frac
    warmup_frac: float = 0.01
    min_lr_frac: float = 0.1  # cosine / wsd floor as a fraction of lr
    decay_frac: float = 0.2  # wsd: the final fraction of the budget over which lr decays linearly
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # 0: off
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"  # auto: bf16 autocast on CUDA
    compile: bool = False
    threads: int = 0  # torch CPU threads; 0: leave torch's default
    checkpoint_every: int = 0  # checkpoint every N updates; 0: by wall time (checkpoint_seconds)
    checkpoint_seconds: float = 60.0  # when checkpoint_every = 0; a checkpoint is also made at the end
    keep_checkpoints: list[int] = field(default_factory=list)  # extra steps to keep weights at
    log_every: int = 10
    divergence_factor: float = 5.0  # fail the run when the loss stays above factor x its first value; 0: off
    divergence_window: int = 5  # ... at this many logged steps in a row (or at the last one)


@dataclass
class MetricsConfig:
    enabled: bool = True
    n_evals: int = 200  # evaluations per run (dense schedule)
    log_fraction: float = 0.5  # share of evaluations log-spaced early; the rest evenly spaced
    probe_seqs: int = 100  # N sequences in the PS/LA/AR probe
    probe_len: int = 0  # n; 0 -> min(MAX_PROBE_LEN, C // 2) (probe_len_of)
    val_seqs: int = 32  # held-out sequences for val_loss at each evaluation
    include: list[str] = field(default_factory=list)  # empty: all registered metrics but contract.OPT_IN_METRICS


@dataclass
class RunConfig:
    name: str = "run"
    seed: int = 0  # the replicate seed; each kind below defaults to it
    # seeds by kind (issue 66); -1: = seed (every shipped run). weight_seed draws the initial weights
    # (torch.manual_seed); data_seed the data: a generator's chain and pool, the training stream, the
    # validation tokens and the probes. A grid may cross them (axes weight_seed, data_seed).
    weight_seed: int = -1
    data_seed: int = -1
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)

    # ---------------------------------------------------------------- derived quantities
    @property
    def grad_accum(self) -> int:
        micro = self.train.micro_batch_size or self.train.batch_size
        return self.train.batch_size // micro

    @property
    def micro_batch(self) -> int:
        return self.train.micro_batch_size or self.train.batch_size

    @property
    def init_seed(self) -> int:
        """The seed of the initial weights: ``weight_seed``, or ``seed`` when it is -1."""
        return self.seed if self.weight_seed < 0 else self.weight_seed

    @property
    def stream_seed(self) -> int:
        """The seed of the data (chain, pool, stream, validation tokens, probes): ``data_seed`` or ``seed``."""
        return self.seed if self.data_seed < 0 else self.data_seed

    @property
    def tokens_per_step(self) -> int:
        return self.train.batch_size * self.train.context

    @property
    def cap_steps(self) -> int:
        """The most updates the budget allows: the budget itself for ``steps`` and ``tokens``, the
        cap for ``until-emergence``. There ``max_tokens > 0`` caps tokens too, so a grid over B x C
        can give every run the same token cap (a fixed update cap lets the largest B x C runs train
        B x C times as many tokens before giving up)."""
        t = self.train
        by_tokens = math.ceil(t.max_tokens / self.tokens_per_step) if t.max_tokens > 0 else None
        if t.budget == "tokens":
            return by_tokens or 0
        if t.budget == "until-emergence" and by_tokens is not None:
            return min(t.max_steps, by_tokens)
        return t.max_steps

    @property
    def cap_reason(self) -> str:
        """The ``stop_reason`` a run gets when it reaches :attr:`cap_steps`."""
        t = self.train
        by_tokens = t.budget == "tokens" or (t.budget == "until-emergence" and self.cap_steps < t.max_steps)
        return "max_tokens" if by_tokens else "max_steps"

    def to_dict(self) -> dict[str, Any]:
        """The whole config as nested dicts (config.json's ``config``), a registered source's
        section beside the shipped ones (recorded at its defaults when it is the source)."""
        getattr(self.data, self.data.source, None)  # a registered source's own section, made when selected
        d = asdict(self)
        d["data"].update(d["data"].pop("sections"))
        return d

    def run_id(self) -> str:
        """Stable short hash of the resolved config (:func:`ihstats.base.ids.config_hash`).

        Excluded: ``name`` (a label) and execution-only fields that do not change the trajectory
        (device placement, threads, compile, checkpoint and log cadence), so a run keeps its id
        when resumed on another machine or with another checkpoint setting.
        """
        return config_hash(self.to_dict())

    def cell_id(self) -> str:
        """The :meth:`run_id` rule without the seeds (``seed``, ``weight_seed``, ``data_seed``):
        replicates of one grid cell share it."""
        return cell_hash(self.to_dict())


# ------------------------------------------------------------------------- overrides
def _field_type(dc: Any, name: str) -> Any:
    hints = typing.get_type_hints(type(dc))
    return hints[name]


def _coerce(value: Any, typ: Any, dotted: str) -> Any:
    """Coerce a value (string from the CLI, or TOML-native) to ``typ`` or raise ConfigError."""
    origin = get_origin(typ)
    if origin is Literal:
        allowed = get_args(typ)
        if value not in allowed:
            raise ConfigError(f"{dotted}: must be one of {', '.join(map(str, allowed))}; got {value!r}")
        return value
    if origin is list:
        (inner,) = get_args(typ)
        if isinstance(value, str):
            value = [v for v in value.strip("[]").split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{dotted}: expected a list, got {value!r}")
        return [_coerce(v.strip() if isinstance(v, str) else v, inner, dotted) for v in value]
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{dotted}: expected true or false, got {value!r}")
    if typ is int:
        if isinstance(value, bool):
            raise ConfigError(f"{dotted}: expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                f = float(value.replace("_", ""))
            except ValueError:
                f = None
            if f is not None and f.is_integer():
                return int(f)
        raise ConfigError(f"{dotted}: expected an integer, got {value!r}")
    if typ is float:
        if isinstance(value, bool):
            raise ConfigError(f"{dotted}: expected a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{dotted}: expected a number, got {value!r}") from None
    if typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"{dotted}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{dotted}: cannot set a value of type {typ}")


def field_names(dc: Any = None, prefix: str = "") -> list[str]:
    """All dotted leaf field names of a config (default: RunConfig)."""
    dc = dc if dc is not None else RunConfig()
    out = []
    for f in fields(dc):
        v = getattr(dc, f.name)
        if f.metadata.get("registry"):  # DataConfig.sections: listed as the sections they are
            out += [n for name, sect in v.items() for n in field_names(sect, f"{prefix}{name}.")]
        elif is_dataclass(v):
            out += field_names(v, f"{prefix}{f.name}.")
        else:
            out.append(f"{prefix}{f.name}")
    return out


def set_field(cfg: RunConfig, dotted: str, value: Any) -> RunConfig:
    """Return a copy of cfg with the dotted field set (type-checked). Errors name the field."""
    cfg = copy_config(cfg)
    _set_in_place(cfg, dotted, value)
    return cfg


def _near(dotted: str) -> str:
    """The known fields closest to a misspelt one, and where to see them all (not all 75 in a line)."""
    close = difflib.get_close_matches(dotted, field_names(), n=3, cutoff=0.6)
    return (f"; did you mean {' or '.join(close)}?" if close else "") + \
        " (every field: python -m ihtrain.train --print-config)"


def _set_in_place(cfg: RunConfig, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    obj = cfg
    for i, p in enumerate(parts[:-1]):
        sub = getattr(obj, p, None)
        if not is_dataclass(sub):
            raise ConfigError(f"{dotted}: unknown config field (no section {'.'.join(parts[:i + 1])!r}){_near(dotted)}")
        obj = sub
    leaf = parts[-1]
    if leaf not in {f.name for f in fields(obj)} or is_dataclass(getattr(obj, leaf)):
        raise ConfigError(f"{dotted}: unknown config field{_near(dotted)}")
    setattr(obj, leaf, _coerce(value, _field_type(obj, leaf), dotted))


def get_field(cfg: RunConfig, dotted: str) -> Any:
    obj: Any = cfg
    for p in dotted.split("."):
        if not hasattr(obj, p):
            raise ConfigError(f"{dotted}: unknown config field")
        obj = getattr(obj, p)
    return obj


def apply_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """Return a copy of cfg with every dotted override applied (type-checked)."""
    cfg = copy_config(cfg)
    for k, v in overrides.items():
        _set_in_place(cfg, k, v)
    return cfg


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict (e.g. from TOML) -> {dotted.name: value}."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def parse_set_args(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected field=value, e.g. train.batch_size=32")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def copy_config(cfg: RunConfig) -> RunConfig:
    return copy.deepcopy(cfg)


def from_dict(d: dict[str, Any]) -> RunConfig:
    """Inverse of asdict, strict: unknown keys raise ConfigError."""
    return apply_overrides(RunConfig(), flatten(d))


def load_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p}: " + ("is a directory; give the TOML file in it" if p.is_dir() else "not found"))
    try:  # utf-8-sig: a byte-order mark some editors write is still UTF-8 text
        return tomllib.loads(p.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {p}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {p}: invalid TOML syntax ({e}); fix it there") from None


def get_preset(name: str) -> RunConfig:
    """Resolved RunConfig of a named preset; unknown names raise ConfigError listing the known."""
    if name not in RUN_PRESETS:
        raise ConfigError(f"preset: unknown preset {name!r}; known presets: {', '.join(preset_names())}")
    return apply_overrides(RunConfig(), RUN_PRESETS[name][1])


#: top-level keys of a grid spec (ihtrain.grid.spec) that no run config has
GRID_SPEC_KEYS = {"axes", "base", "include", "exclude", "extends", "seeds"}


def resolve(preset: str | None = None, config_file: str | None = None,
            overrides: dict[str, Any] | None = None) -> RunConfig:
    """Preset -> TOML file -> --set overrides, then validate."""
    cfg = get_preset(preset) if preset else RunConfig()
    if config_file:
        data = load_toml(config_file)
        if GRID_SPEC_KEYS & set(data):  # a grid spec handed to the trainer: say so, not its unknown fields
            raise ConfigError(f"config file {config_file}: is a grid spec (it has {', '.join(sorted(GRID_SPEC_KEYS & set(data)))}), "
                              f"not a run config; run it with python -m ihtrain.grid --spec {config_file}")
        cfg = apply_overrides(cfg, flatten(data))
    cfg = apply_overrides(cfg, overrides or {})
    return validate(cfg)


def to_json(cfg: RunConfig) -> str:
    return json.dumps(cfg.to_dict(), indent=2, sort_keys=True)


__all__ = [
    "ConfigError", "DataConfig", "MetricsConfig", "ModelConfig",
    "RunConfig", "TrainConfig", "apply_overrides", "field_names", "flatten",
    "from_dict", "get_field", "get_preset", "is_plain_name", "load_toml", "parse_set_args",
    "resolve", "set_field", "to_json",
    "validate", "dataclasses",
]
