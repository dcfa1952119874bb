from django.urls import path

from tlsaudit.alerts import views

app_name = "alerts"
urlpatterns = [
    path("", views.alert_settings, name="settings"),
    path("webhooks/", views.add_webhook, name="add_webhook"),
    path("webhooks/<int:pk>/delete/", views.delete_webhook, name="delete_webhook"),
    path("webhooks/<int:pk>/test/", views.test_webhook, name="test_webhook"),
    path("deliveries/<int:pk>/redeliver/", views.redeliver, name="redeliver"),
]
urlpatterns += [path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe")]
