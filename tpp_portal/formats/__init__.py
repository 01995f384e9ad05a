"""One date format per language (FORMAT_MODULE_PATH): every page shows dates and times the same way.

Django's own formats mix styles within a language ("11/25/2026 9:27 a.m." beside "Nov. 25, 2026" in English);
here the long and the short names give the same text, so a template may use either. Times are 24-hour, in the
portal's time zone (TIME_ZONE). Only the output formats change: what a form accepts stays Django's.
"""
