package recorder

// What the external tests (package recorder_test, which may import
// recordertest) need of the package's internals.

// Content types of the /metrics formats ParseExposition reads.
var (
	ContentTypeText        = contentTypeText
	ContentTypeOpenMetrics = contentTypeOpenMetrics
)

// ResourceCells returns r's value columns of resource-samples.csv by name.
func ResourceCells(r *ResourceSample) map[string]Maybe {
	cells := make(map[string]Maybe, len(resourceColumns))
	for _, c := range resourceColumns {
		cells[c.name] = *c.cell(r)
	}
	return cells
}
