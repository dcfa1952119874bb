"""Response fields a caller gets only on request (`?view=full`, `?include=raw`): in the schema they
are documented but not required, so the default, smaller response is valid against it too."""

from drf_spectacular.extensions import OpenApiSerializerExtension


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
