"""Form fields in the portal's layout: text fields with a length limit get a character count, not a silent cut.

The browser's ``maxlength`` attribute drops the characters typed (or pasted) past the limit without a word: the
user may send a cut name and never know. The limit is therefore moved to ``data-maxlength``, which
static/js/character-count.js counts as the user types (GOV.UK Design System, "Character count"); the server
still refuses a value that is too long, with a message next to the field.
"""

from django import forms, template
from django.utils.translation import ngettext

register = template.Library()

COUNTED_WIDGETS = (forms.TextInput, forms.Textarea)
NOT_COUNTED_WIDGETS = (forms.PasswordInput, forms.EmailInput, forms.URLInput, forms.NumberInput, forms.DateInput)


def counted_limit(bound_field: forms.BoundField) -> int | None:
    """The length limit of a free-text field, or None (no limit, or a field whose value is not free text)."""
    widget = bound_field.field.widget
    if not isinstance(widget, COUNTED_WIDGETS) or isinstance(widget, NOT_COUNTED_WIDGETS) or widget.is_hidden:
        return None
    limit = widget.attrs.get("maxlength") or getattr(bound_field.field, "max_length", None)
    try:
        return int(limit) if limit else None
    except (TypeError, ValueError):
        return None


def is_counted(bound_field: forms.BoundField) -> bool:
    """Whether the count is shown: not for an account number, BIC or identity number (spell-checking off:
    checked by its own rules), a search box, or a form that says so (``character_count = False``: filters)."""
    attrs = bound_field.field.widget.attrs
    return (
        attrs.get("spellcheck") != "false"
        and attrs.get("type") != "search"
        and getattr(bound_field.form, "character_count", True)
    )


@register.simple_tag
def field_widget(bound_field: forms.BoundField):
    """The field's widget without ``maxlength``; a counted one is also described by its count hint."""
    limit = counted_limit(bound_field)
    if limit is None:
        return bound_field.as_widget()
    if not is_counted(bound_field):
        return bound_field.as_widget(attrs={"maxlength": False})  # too long: the server says what is wrong
    described_by = []
    if bound_field.help_text:
        described_by.append(f"{bound_field.auto_id}_helptext")
    if bound_field.errors:
        described_by.append(f"{bound_field.auto_id}_error")
    described_by.append(f"{bound_field.auto_id}_count")
    return bound_field.as_widget(
        attrs={"maxlength": False, "data-maxlength": limit, "aria-describedby": " ".join(described_by)}
    )


@register.inclusion_tag("includes/character_count.html")
def character_count(bound_field: forms.BoundField) -> dict:
    """The hint under a counted field and the texts the script shows as the user types (plural forms included)."""
    limit = counted_limit(bound_field)
    if limit is None or not is_counted(bound_field):
        return {"limit": None}

    # Bokmål and English have two forms, one (1) and other; the script picks one and puts the number in.
    def remaining(n: int) -> str:
        return ngettext("You have %(count)s character remaining", "You have %(count)s characters remaining", n)

    def over(n: int) -> str:
        return ngettext("You have %(count)s character too many", "You have %(count)s characters too many", n)

    return {
        "limit": limit,
        "id": f"{bound_field.auto_id}_count",
        "for": bound_field.id_for_label,
        "hint": ngettext(
            "You can enter up to %(count)s character", "You can enter up to %(count)s characters", limit
        )
        % {"count": limit},
        "remaining_one": remaining(1),
        "remaining_other": remaining(2),
        "over_one": over(1),
        "over_other": over(2),
    }
