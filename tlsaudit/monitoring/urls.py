from django.urls import path

from tlsaudit.monitoring import views

app_name = "monitoring"
urlpatterns = [
    path("sites/<int:pk>/history/", views.site_history, name="history"),
    path("sites/<int:pk>/schedule/", views.site_schedule, name="schedule"),
]
urlpatterns += [
    path("portfolio/", views.portfolio, name="portfolio"),
    path("portfolio/window/", views.schedule_window, name="window"),
    path("portfolio/run-now/", views.run_next_now, name="run_next_now"),
]
