"""The API's serializers, one module per resource as the views are (views/); shapes several share in common."""
