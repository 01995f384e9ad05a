"""How the payments app plugs into part 1 at start-up (PisConfig.ready()): the PAYMENT SCA purpose, the OpenAPI
paths and the sandbox reset of the lost answers."""

from __future__ import annotations

from bank_simulator import services as bank_services
from bank_simulator.models import ScaPurpose
from bank_simulator.pis import lost_answers
from bank_simulator.pis import openapi as pis_openapi
from bank_simulator.pis.sca import PaymentPurpose
from bank_simulator.sca_purposes import PURPOSES
from bank_simulator.views import openapi


def register() -> None:
    PURPOSES[ScaPurpose.PAYMENT] = PaymentPurpose()
    if lost_answers.disarm not in bank_services.SANDBOX_RESETS:
        bank_services.SANDBOX_RESETS.append(lost_answers.disarm)
    openapi.SCHEMAS.update(pis_openapi.SCHEMAS)
    if pis_openapi.paths not in openapi.PATH_EXTENSIONS:
        openapi.PATH_EXTENSIONS.append(pis_openapi.paths)
