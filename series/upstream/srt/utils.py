"""Small helpers shared across the runtime."""

from __future__ import annotations

import logging
import os
from functools import lru_cache

logger = logging.getLogger(__name__)


def get_bool_env_var(name: str, default: str = "false") -> bool:
    """Read an environment variable as a boolean ("1", "true", "yes", "on" are true)."""
    value = os.getenv(name, default)
    return value.strip().lower() in ("1", "true", "yes", "on")


def get_int_env_var(name: str, default: int = 0) -> int:
    """Read an environment variable as an integer, falling back to ``default``."""
    value = os.getenv(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        logger.warning("Ignoring non-integer value %r for %s", value, name)
        return default


def ceil_div(a: int, b: int) -> int:
    """Integer division rounding up."""
    return (a + b - 1) // b


@lru_cache(maxsize=1)
def is_cuda() -> bool:
    """Whether a CUDA device is visible to this process."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@lru_cache(maxsize=8)
def get_device_sm(device_id: int = 0) -> int:
    """Compute capability of a device as one integer, e.g. 90 for SM90, 0 without CUDA."""
    if not is_cuda():
        return 0
    import torch

    major, minor = torch.cuda.get_device_capability(device_id)
    return major * 10 + minor


def configure_logger(prefix: str = "") -> None:
    """Set up the root logger once per process, honouring ``SRT_LOG_LEVEL``."""
    level = os.getenv("SRT_LOG_LEVEL", "info").upper()
    fmt = f"[%(asctime)s{prefix}] %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=getattr(logging, level, logging.INFO), format=fmt, force=True)
