// Django's admin texts of its JavaScript (the catalogue of /admin/jsi18n/: the permission and group selectors,
// the calendar) that Django's own bokmål catalogue leaves untranslated (Django 5.2), listed here so that the
// portal's catalogue (locale/nb/LC_MESSAGES/djangojs.po) holds their translation; the admin's JavaScript
// catalogue adds the LOCALE_PATHS catalogues to Django's. Nothing loads this file: `makemessages -d djangojs`
// reads it. The server-side texts are in django_words.py; tests/staff/test_staff_words.py checks both lists.
gettext('Choose %s by selecting them and then select the "Choose" arrow button.');
gettext("Choose all %s");
gettext("Choose selected %s");
gettext("Remove selected %s");
gettext('Remove %s by selecting them and then select the "Remove" arrow button.');
gettext("Type into this box to filter down the list of selected %s.");
gettext("(click to clear)");
gettext("Remove all %s");
ngettext("%s selected option not visible", "%s selected options not visible", 1);
gettext("Sunday");
gettext("Monday");
gettext("Tuesday");
gettext("Wednesday");
gettext("Thursday");
gettext("Friday");
gettext("Saturday");
pgettext("abbrev. day Sunday", "Sun");
pgettext("abbrev. day Monday", "Mon");
pgettext("abbrev. day Tuesday", "Tue");
pgettext("abbrev. day Wednesday", "Wed");
pgettext("abbrev. day Thursday", "Thur");
pgettext("abbrev. day Friday", "Fri");
pgettext("abbrev. day Saturday", "Sat");
