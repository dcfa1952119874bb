"""Response fields a caller may not get, made optional in the schema so every answer is valid against it:

- on resources that take `?fields=` (serializers with FieldsMixin), every field: `?fields=id,grade` sends
  those two and nothing else, and a generated client must not fail on the others' absence;
- elsewhere, the fields sent only on request (`?view=full`, `?include=raw`), named by `schema_optional`.
"""

from drf_spectacular.extensions import OpenApiSerializerExtension

from tlsaudit.api.base import FieldsMixin

SPARSE_NOTE = "Every field is sent unless `?fields=` names others: a generated client must treat each as optional."


class OptionalInSchema:
    """Serializer mixin: `schema_optional` names the fields present only when asked for."""

    schema_optional: tuple[str, ...] = ()


class OptionalFieldsExtension(OpenApiSerializerExtension):
    target_class = OptionalInSchema
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        optional = set(self.target.schema_optional)
        required = [name for name in schema.get("required", []) if name not in optional]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
        return schema


class SparseFieldsExtension(OpenApiSerializerExtension):
    """Wins over OptionalFieldsExtension (a serializer may have both mixins): nothing is required."""

    target_class = FieldsMixin
    match_subclasses = True
    priority = 1

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema.pop("required", None)
        schema["description"] = " ".join(filter(None, [schema.get("description"), SPARSE_NOTE]))
        return schema
