"""Connect to a running dask scheduler (``tcp://`` or ``tls://``) with dask's own security settings."""

from __future__ import annotations

from wideml.exceptions import ConfigError
from wideml.runtime.addresses import check_address


def security_for(spec: str):
    """The ``distributed.security.Security`` built from dask's config (``distributed.comm.tls.*``).

    Parameters
    ----------
    spec : str
        The scheduler address.

    Raises
    ------
    ConfigError
        For a ``tls://`` address when dask's config names no CA file or no client certificate.
    """
    from distributed.security import Security  # heavy (most of a second): only when connecting

    security = Security()
    if spec.startswith("tls://") and not (security.tls_ca_file and security.tls_client_cert):
        raise ConfigError(
            f"scheduler address {spec} uses TLS but dask's config has no TLS settings; set distributed.comm.tls.ca-file, "
            "distributed.comm.tls.client.cert and distributed.comm.tls.client.key (e.g. DASK_DISTRIBUTED__COMM__TLS__CA_FILE=ca.pem), "
            "or use a tcp:// address."
        )
    return security


def connect(spec: str):
    """A ``distributed.Client`` of the scheduler at ``spec``.

    Raises
    ------
    ConfigError
        If the address is malformed, TLS settings are missing, or no scheduler answers.
    """
    from distributed import Client  # heavy (most of a second): only when connecting

    check_address(spec)
    security = security_for(spec)
    try:
        return Client(spec, timeout="3s", security=security)
    except (ValueError, TypeError) as exc:  # e.g. unreadable certificate files
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
        raise ConfigError(f"cannot connect to the dask scheduler at {spec} ({reason}); check the address and, "
                          "for tls://, distributed.comm.tls.* in dask's config.") from None
    except (OSError, TimeoutError):
        hint = " and that distributed.comm.tls.* names the scheduler's CA and a certificate it accepts" if spec.startswith("tls://") else ""
        raise ConfigError(
            f"cannot reach a dask scheduler at {spec}; start one with 'dask scheduler' and 'dask worker {spec}', "
            f"or check the address{hint}."
        ) from None
