from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm

from tlsaudit.accounts.models import User


class SignupForm(forms.ModelForm):
    password = forms.CharField(widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                               help_text=password_validation.password_validators_help_text_html())

    class Meta:
        model = User
        fields = ["full_name", "email"]

    def clean_email(self):
        email = self.cleaned_data["email"].strip().lower()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError("An account with this email address already exists. Log in instead.")
        return email

    def clean_password(self):
        password = self.cleaned_data["password"]
        candidate = User(email=self.cleaned_data.get("email", ""), full_name=self.cleaned_data.get("full_name", ""))
        password_validation.validate_password(password, candidate)
        return password

    def save(self, commit=True):
        user = super().save(commit=False)
        user.set_password(self.cleaned_data["password"])
        if commit:
            user.save()
        return user


class EmailAuthenticationForm(AuthenticationForm):
    username = forms.EmailField(label="Email", widget=forms.EmailInput(attrs={"autofocus": True,
                                                                            "autocomplete": "email"}))

    def clean_username(self):
        # Accounts store the address in lower case (see UserManager), so log in the same way.
        return self.cleaned_data["username"].strip().lower()
