"""The error a bad configuration raises, at the bottom of ihtrain: the config, its checks and the
data sources (whose ``DataError`` derives from it) all raise it, and none of them need import the
others for it."""


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range (message names the field)."""


def need(ok: bool, name: str, msg: str) -> None:
    """Raise ``ConfigError("name: msg")`` unless ``ok``: every range check of a config field."""
    if not ok:
        raise ConfigError(f"{name}: {msg}")


__all__ = ["ConfigError", "need"]
