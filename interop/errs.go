package interop

import (
	"encoding/json"
	"errors"
)

func asSyntax(err error, t **json.SyntaxError) bool      { return errors.As(err, t) }
func asType(err error, t **json.UnmarshalTypeError) bool { return errors.As(err, t) }
