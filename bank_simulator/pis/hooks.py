"""How the payments app plugs into part 1 at start-up: the PAYMENT SCA purpose and the OpenAPI paths."""

from __future__ import annotations


def register() -> None:
    from bank_simulator.models import ScaPurpose
    from bank_simulator.pis import openapi as pis_openapi
    from bank_simulator.pis.sca import PaymentPurpose
    from bank_simulator.sca_purposes import PURPOSES
    from bank_simulator.views import openapi

    PURPOSES[ScaPurpose.PAYMENT] = PaymentPurpose()
    openapi.SCHEMAS.update(pis_openapi.SCHEMAS)
    if pis_openapi.paths not in openapi.PATH_EXTENSIONS:
        openapi.PATH_EXTENSIONS.append(pis_openapi.paths)
