"""Demo and benchmark data: `manage.py seed_demo` (a year of nightly audits for many sites).

Not a Django app (no models): `configs` describes a handful of server configurations as ScanFacts,
`stories` draws each site's year, `perfdata` builds performance-run and probe results in the
engines' shapes, and `seed` writes it all with bulk inserts.
"""
