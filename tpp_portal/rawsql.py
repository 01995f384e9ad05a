"""Hot statements written out, with the ORM's own conversions.

Every background refresh runs the same few statements for one account, and every payment submission two UPDATEs
and two INSERTs. On a small machine the ORM spends about a millisecond of CPU building each one, more than the
database takes to run it, and that CPU is taken from the worker next door and from the bank. The hot statements
of the refresh (``accounts.sync``, ``accounts.refresh``) and of the submission (``payments.services``) are
therefore written out with these helpers, which apply the ORM's own conversions of the values going in
(``get_db_prep_*``) and coming out (the backend's and the fields' converters: dates on SQLite, decimals, JSON,
decrypted fields), so callers get the same values and model instances as from the ORM. Table and column names
come from the models, values are always bound parameters. ``tests/accounts/test_refresh_statements.py`` and
``tests/payments/test_submit_statements.py`` check each statement against the ORM's on SQLite and PostgreSQL.

On PostgreSQL the writes (:func:`insert`, :func:`update`, :func:`update_and_insert`) are also prepared on the
server, from their second run on a connection: parsing and planning took about as long as running them. Django
leaves psycopg's prepared statements off (a pooler in transaction mode loses them); here only these statements
are prepared, through a server-binding cursor, and ``DATABASE_PREPARED_STATEMENTS=false`` turns it off for such a
pooler. A migration that changes the type of a column these statements write fails them on the connections
open at the time (the statement keeps the old parameter types) until they are closed: at most
``CONN_MAX_AGE`` (60 s), or restart the workers after such a migration.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models import Field, Model

#: PostgreSQL's limit on the parameters of one statement bound on the server; a longer one is bound client-side.
MAX_SERVER_PARAMETERS = 65535


def quoted(model: type[Model], name: str) -> str:
    """The quoted column of ``model``'s field ``name``."""
    return _quoted(model, name, connection.vendor)


def table(model: type[Model]) -> str:
    return _quoted(model, None, connection.vendor)


def columns(model: type[Model], alias: str) -> str:
    """Every concrete column of ``model`` for a SELECT, prefixed by the table's ``alias``."""
    return _columns(model, alias, connection.vendor)


@functools.lru_cache(maxsize=256)
def _quoted(model: type[Model], name: str | None, vendor: str) -> str:  # vendor: the quoting's (cache key)
    return connection.ops.quote_name(model._meta.db_table if name is None else model._meta.get_field(name).column)


@functools.lru_cache(maxsize=32)
def _columns(model: type[Model], alias: str, vendor: str) -> str:  # vendor: the quoting's (cache key)
    return ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in model._meta.concrete_fields)


@functools.lru_cache(maxsize=64)
def _converters(fields: tuple[Field, ...], wrapper: Any) -> list[tuple[int, list[Any], Any]]:
    """What the ORM's compiler applies to each column read for ``fields`` (``SQLCompiler.get_converters``)."""
    found = []
    for index, field in enumerate(fields):
        column = field.get_col(field.model._meta.db_table)
        applied = wrapper.ops.get_db_converters(column) + column.get_db_converters(wrapper)
        if applied:
            found.append((index, applied, column))
    return found


def read(fields: tuple[Field, ...], sql: str, params: list[Any]) -> list[list[Any]]:
    """Run ``sql`` (its columns those of ``fields``, in order) and return the rows as the ORM would read them."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [list(row) for row in cursor.fetchall()]
    wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's (``connection`` is a proxy to it)
    for index, applied, column in _converters(fields, wrapper):
        for row in rows:
            value = row[index]
            for converter in applied:
                value = converter(value, column, wrapper)
            row[index] = value
    return rows


def instance(model: type[Model], values: list[Any]) -> Any:
    """A saved ``model`` instance from the values of every concrete field (as :func:`read` returns them)."""
    return model.from_db(connection.alias, [f.attname for f in model._meta.concrete_fields], values)


def prepared(model: type[Model], name: str, value: Any) -> Any:
    """``value`` of ``model``'s field ``name`` as a statement parameter (as the ORM sends it)."""
    return model._meta.get_field(name).get_db_prep_save(value, connections[DEFAULT_DB_ALIAS])


def insert(model: type[Model], names: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """One INSERT of ``rows`` (values of the fields ``names``, in order); nothing when there are none."""
    if not rows:
        return
    wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's, looked up once (``connection`` is a proxy to it)
    fields, sql = _insert_statement(model, names, len(rows), wrapper.vendor)
    params = _row_params(fields, rows, wrapper)
    with _write_cursor(wrapper, len(params)) as cursor:
        cursor.execute(sql, params)


def _row_params(fields: tuple[Field, ...], rows: list[tuple[Any, ...]], wrapper: Any) -> list[Any]:
    return [_saved(f, value, wrapper) for row in rows for f, value in zip(fields, row, strict=True)]


#: Field classes (exactly these, not subclasses) whose ``get_db_prep_save`` gives back a value of the type here
#: (or of a subclass: a text choice) unchanged on every backend: ``to_python`` returns it as it is and no backend
#: adapts it. ``tests/tpp_portal/test_rawsql_prepared.py`` checks it against the ORM.
_SAVED_AS_IS: dict[type, type] = {models.CharField: str, models.TextField: str, models.BooleanField: bool}


def _saved(field: Field, value: Any, wrapper: Any) -> Any:
    """``field.get_db_prep_save(value, wrapper)``, without its calls for the texts and booleans it leaves as
    they are (most of the values of the hot statements)."""
    kind = _SAVED_AS_IS.get(field.__class__)
    if kind is not None and isinstance(value, kind):
        return value
    return field.get_db_prep_save(value, wrapper)


@functools.lru_cache(maxsize=64)
def _insert_statement(
    model: type[Model], names: tuple[str, ...], count: int, vendor: str, *, conditional: bool = False
):  # vendor: cache key. conditional: PostgreSQL, inside update_and_insert's WITH, only when ``changed`` has rows
    fields = tuple(model._meta.get_field(name) for name in names)
    columns_ = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    if not conditional:
        placeholders = "(" + ", ".join(["%s"] * len(fields)) + ")"
        return fields, f"INSERT INTO {table(model)} ({columns_}) VALUES {', '.join([placeholders] * count)}"  # noqa: S608 - names from the model, values bound
    # A VALUES list under SELECT takes no types from the target columns: each value is cast to its column's type
    # without the length or precision (the INSERT applies those, refusing a too long text as it always does).
    casts = "(" + ", ".join(f"%s::{_base_type(f)}" for f in fields) + ")"
    return fields, (
        f"INSERT INTO {table(model)} ({columns_}) SELECT * FROM (VALUES {', '.join([casts] * count)}) AS v "  # noqa: S608 - names from the model, values bound
        "WHERE EXISTS (SELECT 1 FROM changed)"
    )


def _base_type(field: Field) -> str:
    """``field``'s column type without its modifiers: ``varchar(12)`` -> ``varchar``."""
    return re.sub(r"\(.*\)", "", field.db_type(connection)).strip()


#: What one INSERT writes: the model, the field names and the rows of their values (as :func:`insert` takes them).
Rows = tuple[type[Model], tuple[str, ...], list[tuple[Any, ...]]]


def instance_rows(objs: Sequence[Model]) -> Rows:
    """New instances of one model (at least one) as the rows :func:`insert` writes, the values as
    ``bulk_create`` writes them (each field's ``pre_save``, then ``get_db_prep_save``); the primary key is the
    database's and is not read back."""
    if not objs:
        raise ValueError("instance_rows needs at least one instance (it names their model)")
    if any(obj.pk is not None for obj in objs):
        raise ValueError("instance_rows takes new rows only: the database gives the primary key")
    model = type(objs[0])
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    return model, tuple(f.attname for f in fields), [tuple(f.pre_save(obj, True) for f in fields) for obj in objs]


def update(model: type[Model], values: Mapping[str, Any], where: Mapping[str, Any]) -> int:
    """One UPDATE of the ``model`` rows that match ``where`` (field name -> value; a tuple of values for IN),
    setting ``values`` (field name -> value) as ``QuerySet.update`` would; the number of rows changed.
    Values are plain ones (no expressions); on a model with ``auto_now`` fields, give their value. Conditions
    are equalities of concrete field names (``id``, not ``pk``): None, an empty tuple or another collection
    are refused rather than written as SQL that would differ from the ORM's (``= NULL``, ``IN ()``)."""
    wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's, looked up once (``connection`` is a proxy to it)
    sql, params = _update_sql(wrapper, model, values, where)
    # Marked for rollback on an error, as QuerySet.update does.
    with transaction.mark_for_rollback_on_error(), _write_cursor(wrapper, len(params)) as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _update_sql(wrapper: Any, model: type[Model], values: Mapping[str, Any], where: Mapping[str, Any]):
    """The statement of :func:`update` and its parameters."""
    for name, value in where.items():
        if value is None or (isinstance(value, tuple) and not value) or isinstance(value, list | set | frozenset):
            raise ValueError(f"rawsql.update: the condition on {name!r} needs a value or a non-empty tuple")
    shape = tuple((name, len(value) if isinstance(value, tuple) else None) for name, value in where.items())
    assigned, matched, sql = _update_statement(model, tuple(values), shape, wrapper.vendor)
    params = [_saved(f, value, wrapper) for f, value in zip(assigned, values.values(), strict=True)]
    for field, value in zip(matched, where.values(), strict=True):
        if isinstance(value, tuple):
            params += [field.get_db_prep_value(item, wrapper) for item in value]
        else:
            params.append(field.get_db_prep_value(value, wrapper))
    return sql, params


def update_and_insert(
    model: type[Model],
    values: Mapping[str, Any],
    where: Mapping[str, Any],
    *,
    always: Sequence[Rows] = (),
    if_updated: Sequence[Rows] = (),
) -> int:
    """:func:`update`, and INSERTs committed with it: the ``always`` rows whatever the UPDATE matched, the
    ``if_updated`` rows only when it changed a row. Returns the number of rows it changed.

    On PostgreSQL this is one statement (the UPDATE and the INSERTs as data-modifying WITH queries): outside a
    transaction it commits by itself, in one round trip instead of five (BEGIN, three statements, COMMIT); the
    database chooses the order of the INSERTs (do not rely on the order of primary keys across them). Elsewhere
    the statements run in one transaction (``transaction.atomic``). Inside a transaction either way is a
    savepoint: an error leaves the outer transaction usable."""
    always = [part for part in always if part[2]]
    if_updated = [part for part in if_updated if part[2]]
    wrapper = connections[DEFAULT_DB_ALIAS]
    if wrapper.vendor != "postgresql":
        with transaction.atomic(using=wrapper.alias):
            for part in always:
                insert(*part)
            changed = update(model, values, where)
            if changed:
                for part in if_updated:
                    insert(*part)
        return changed
    update_sql, params = _update_sql(wrapper, model, values, where)
    queries = [f"changed AS ({update_sql} RETURNING 1)"]
    for number, (target, names, rows) in enumerate([*always, *if_updated]):
        conditional = number >= len(always)
        fields, sql = _insert_statement(target, names, len(rows), wrapper.vendor, conditional=conditional)
        params += _row_params(fields, rows, wrapper)
        queries.append(f"insert_{number} AS ({sql})")
    sql = f"WITH {', '.join(queries)} SELECT count(*) FROM changed"  # noqa: S608 - built above from the models
    savepoint = transaction.atomic(using=wrapper.alias) if wrapper.in_atomic_block else contextlib.nullcontext()
    with savepoint, transaction.mark_for_rollback_on_error(), _write_cursor(wrapper, len(params)) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


@functools.lru_cache(maxsize=64)
def _update_statement(
    model: type[Model], names: tuple[str, ...], shape: tuple[tuple[str, int | None], ...], vendor: str
):  # vendor: the quoting's (cache key); shape: each condition's field and its IN list's length (None: =)
    meta, quote = model._meta, connection.ops.quote_name
    assigned = tuple(meta.get_field(name) for name in names)
    matched = tuple(meta.get_field(name) for name, _ in shape)
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in assigned)
    conditions = " AND ".join(
        f"{quote(f.column)} = %s" if count is None else f"{quote(f.column)} IN ({', '.join(['%s'] * count)})"
        for f, (_, count) in zip(matched, shape, strict=True)
    )
    return assigned, matched, f"UPDATE {table(model)} SET {assignments} WHERE {conditions}"  # noqa: S608 - names from the model, values bound


def _write_cursor(wrapper: Any, parameters: int) -> Any:
    """A cursor of ``wrapper`` (this thread's connection) for one write: on PostgreSQL with prepared statements
    allowed, a server-binding cursor whose statements are prepared from their second run on the connection,
    wrapped as Django wraps its own cursors (execute wrappers apply); else the connection's usual cursor. Also the
    usual one while Django logs the queries (DEBUG, a test's query capture): its log shows a statement bound on
    the server without its text."""
    if (
        wrapper.vendor != "postgresql"
        or not _psycopg3()
        or not getattr(settings, "DATABASE_PREPARED_STATEMENTS", True)
        or parameters > MAX_SERVER_PARAMETERS
        or wrapper.queries_logged
    ):
        return wrapper.cursor()
    wrapper.close_if_health_check_failed()  # as Django's own cursor() does
    wrapper.ensure_connection()
    with wrapper.wrap_database_errors:
        return wrapper._prepare_cursor(_preparing_cursor_class()(wrapper.connection))


@functools.cache
def _psycopg3() -> bool:
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return is_psycopg3


#: psycopg prepares one of these statements on its second run on a connection and runs it prepared from then on
#: (preparing costs a round trip more, so a statement run only once on a connection is never prepared).
PREPARE_AFTER = 1


@functools.cache
def _preparing_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparingCursor(ServerBindingCursor):
        """Binds on the server; psycopg prepares what it runs. Django leaves psycopg's ``prepare_threshold``
        None (nothing prepared); it is set only around this cursor's statements, because with a threshold
        psycopg counts every query the connection runs, keeping each one's text (with its values: client-side
        binding) in memory. A threshold the deployment set itself (``OPTIONS``) is left as it is."""

        def execute(self, query, params=None, *, prepare=None, binary=None):
            connection_ = self.connection
            if connection_.prepare_threshold is not None:
                return super().execute(query, params, prepare=prepare, binary=binary)
            connection_.prepare_threshold = PREPARE_AFTER
            try:
                return super().execute(query, params, prepare=prepare, binary=binary)
            finally:
                connection_.prepare_threshold = None

    return PreparingCursor
