from django.urls import path

from tlsaudit.monitoring import views

app_name = "monitoring"
urlpatterns = [
    path("sites/<int:pk>/history/", views.site_history, name="history"),
]
urlpatterns += [path("portfolio/", views.portfolio, name="portfolio")]
