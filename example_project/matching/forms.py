from django import forms

from example_project.matching import limits
from example_project.matching.models import Project


class MatchForm(forms.Form):
    projects = forms.ModelMultipleChoiceField(
        queryset=Project.objects.all(), widget=forms.CheckboxSelectMultiple
    )

    def clean_projects(self):
        projects = self.cleaned_data["projects"]
        limit = limits.max_selection()
        if len(projects) > limit:
            raise forms.ValidationError(f"Pick at most {limit} projects at a time.")
        return projects
