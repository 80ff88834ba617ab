"""`python -m harness.records`: regenerate the published JSON Schemas from the records."""

from .schemas import write_schemas

write_schemas()
