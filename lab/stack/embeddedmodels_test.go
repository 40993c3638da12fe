package stack

import (
	"slices"
	"testing"

	"github.com/slowlab/slowlab/appserver"
)

// The embedded app's models are appserver's, defined once there: a model
// added to appserver.ModelSpecs is one of the app's, with its sizes.
func TestEmbeddedModelsAreAppservers(t *testing.T) {
	saved := appserver.ModelSpecs
	t.Cleanup(func() { appserver.ModelSpecs = saved })
	appserver.ModelSpecs = append(slices.Clone(saved), appserver.ModelSpec{Model: "stub", Sized: true, Threads: true})
	models := embeddedApp{}.Models()
	if !slices.Contains(models, Model{Name: "stub", Sized: true, Threads: true}) {
		t.Errorf("embedded models %+v: want appserver's stub", models)
	}
	for _, want := range []Model{{Name: "sync", Sized: true}, {Name: "gthread", Sized: true, Threads: true}, {Name: "async"}} {
		if !slices.Contains(models, want) {
			t.Errorf("embedded models %+v: want %+v", models, want)
		}
	}
}
