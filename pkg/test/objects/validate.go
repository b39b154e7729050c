package objects

import (
	"errors"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// InvalidLabel marks an object ValidateByLabel rejects; the label's value
// is the field named in the error. Controller tests use it so that they
// are about the controller, not the validation rules.
const InvalidLabel = "test.wayfinder.dev/invalid-field"

// ValidateByLabel is a validator that rejects exactly the objects carrying
// InvalidLabel.
func ValidateByLabel(c config.Config) error {
	if field, ok := c.Labels[InvalidLabel]; ok {
		return errors.Join(config.FieldErrorf(field, "rejected by the test validator"))
	}
	return nil
}
