"""``/api/v1/accounts``: the account book — list, add, edit, remove, prefer, pause, check.

An account's key may be *sent* here (to be stored in the vault) and is never answered:
:class:`~relay.core.accounts.Account` holds only whether the vault has one (``has_key``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, AccountBody, AccountEdit, Done, PausedBody, PreferredBody
from relay.core.accounts import UNCHANGED, Account
from relay.core.errors import AccountError
from relay.engine.account_check import AccountCheck, check_account

router = APIRouter(prefix="/api/v1/accounts", tags=["accounts"], responses=ERRORS)
ONE = "/{provider}/{label}"


@router.get("", response_model=list[Account])
async def all_accounts(eng: EngineDep) -> list[Account]:
    """Every registered account (never a key: whether the vault holds one)."""
    return await eng.accounts.all()


@router.get(ONE, response_model=Account | None)
async def get(provider: str, label: str, eng: EngineDep) -> Account | None:
    """One account, or null when it is not registered."""
    return await eng.accounts.get(provider, label)


@router.post("", status_code=201, response_model=Account)
async def add(body: AccountBody, eng: EngineDep) -> Account:
    """Register an account; an ``api_key`` goes into the vault and is never answered."""
    return await eng.accounts.add(body.provider, body.label, body.config_dir, body.auth_kind,
                                  body.api_key.get_secret_value() if body.api_key else None)


@router.patch(ONE, response_model=Account)
async def edit(provider: str, label: str, body: AccountEdit, eng: EngineDep) -> Account:
    """Change what the body names; what it leaves out stays as it is."""
    given = body.model_fields_set
    changes: dict[str, Any] = {
        "config_dir": body.config_dir if "config_dir" in given else UNCHANGED,
        "auth_kind": body.auth_kind if body.auth_kind is not None else UNCHANGED,
        "api_key": body.api_key.get_secret_value() if body.api_key else UNCHANGED,
        "new_label": body.new_label if body.new_label is not None else UNCHANGED}
    return await eng.accounts.edit(provider, label, **changes)


@router.delete(ONE, response_model=Done)
async def remove(provider: str, label: str, eng: EngineDep) -> Done:
    """Forget the account and delete its key (its folder is left alone)."""
    await eng.accounts.remove(provider, label)
    return Done()


@router.put("/{provider}/preferred", response_model=Done)
async def set_preferred(provider: str, body: PreferredBody, eng: EngineDep) -> Done:
    """The provider's preferred account (``label: null``: none)."""
    await eng.accounts.set_preferred(provider, body.label)
    return Done()


@router.put(ONE + "/paused", response_model=Done)
async def set_paused(provider: str, label: str, body: PausedBody, eng: EngineDep) -> Done:
    """Pause (sessions skip it) or resume an account."""
    await eng.accounts.set_paused(provider, label, body.paused)
    return Done()


@router.post(ONE + "/check", response_model=AccountCheck)
async def check(provider: str, label: str, eng: EngineDep) -> AccountCheck:
    """Whether the account answers: a real, tiny request to its CLI (spends a few tokens)."""
    account = await eng.accounts.get(provider, label)
    if account is None:
        raise AccountError(f"No account {provider}:{label}.",
                           "List them with `relay-cli accounts list`.")
    return await check_account(account, eng.accounts, eng.config)
