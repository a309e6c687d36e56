package lint

import (
	"go/ast"
	"go/types"
	"strings"
)

// exemptionMarker starts a reviewed exemption from the map-range rule. It
// must be followed by a reason: `//determinism:ok only sums the values`.
const exemptionMarker = "//determinism:ok"

// unorderedIterators are the functions of package maps whose iterators
// yield in map order.
var unorderedIterators = map[string]bool{"Keys": true, "Values": true, "All": true}

// checkMapRanges applies rule 2 to every core package under every build
// configuration it has. The error is a failure to run the go command, not a
// finding.
func checkMapRanges(repo *repository) ([]violation, error) {
	packages := deterministicPackages(repo)
	configurations := buildConfigurations(packages)
	var violations []violation
	for _, tags := range sortedKeys(configurations) {
		typed, problems, err := typeCheckCore(repo, tags, configurations[tags], packages)
		if err != nil {
			return nil, err
		}
		violations = append(violations, problems...)
		for _, checked := range typed {
			violations = append(violations, mapRangesOfPackage(repo, checked)...)
		}
	}
	return sortViolations(violations), nil
}

// mapRangesOfPackage finds the unexempted map ranges of one typed package.
func mapRangesOfPackage(repo *repository, checked typedPackage) []violation {
	var violations []violation
	for _, file := range checked.files {
		exemptions := exemptionsByLine(repo, file.syntax)
		ast.Inspect(file.syntax, func(node ast.Node) bool {
			statement, isRange := node.(*ast.RangeStmt)
			if isRange && rangesInMapOrder(checked.info, statement) {
				if v, found := judgeMapRange(repo, statement, exemptions); found {
					violations = append(violations, v)
				}
			}
			return true
		})
	}
	return violations
}

// judgeMapRange returns the violation of a map range, unless an exemption
// with a reason sits on its line or the line above.
func judgeMapRange(repo *repository, statement *ast.RangeStmt, exemptions map[int]string) (violation, bool) {
	file, line := repo.position(statement.Pos())
	v := violation{file: file, line: line, rule: "map-range"}
	reason, exempt := exemptions[line]
	if !exempt {
		reason, exempt = exemptions[line-1]
	}
	switch {
	case !exempt:
		v.message = "range over a map in the core: its order is random and could reach an output; iterate sorted keys (slices.Sorted(maps.Keys(m))), or mark a reviewed exemption with " + exemptionMarker + " <reason> on this line or the line above"
	case reason == "":
		v.message = exemptionMarker + " needs a reason saying why the order cannot reach an output"
	default:
		return v, false
	}
	return v, true
}

// exemptionsByLine maps each line holding an exemption comment to the
// comment's reason ("" if it gives none).
func exemptionsByLine(repo *repository, syntax *ast.File) map[int]string {
	exemptions := map[int]string{}
	for _, group := range syntax.Comments {
		for _, comment := range group.List {
			rest, found := strings.CutPrefix(comment.Text, exemptionMarker)
			if found && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				_, line := repo.position(comment.Pos())
				exemptions[line] = strings.TrimSpace(rest)
			}
		}
	}
	return exemptions
}

// rangesInMapOrder reports a range statement whose iteration order is a
// map's: over a value of map type, or over maps.Keys, maps.Values or
// maps.All. A range that binds neither key nor value cannot observe the
// order and is not reported.
func rangesInMapOrder(info *types.Info, statement *ast.RangeStmt) bool {
	if statement.Key == nil && statement.Value == nil {
		return false
	}
	if isMapType(info.TypeOf(statement.X)) {
		return true
	}
	call, isCall := ast.Unparen(statement.X).(*ast.CallExpr)
	return isCall && isUnorderedIterator(info, call.Fun)
}

// isMapType reports a map type, or a type parameter every type of whose
// constraint is a map.
func isMapType(typ types.Type) bool {
	if typ == nil {
		return false
	}
	if parameter, isParameter := typ.(*types.TypeParam); isParameter {
		return constraintIsMap(parameter.Constraint())
	}
	_, isMap := typ.Underlying().(*types.Map)
	return isMap
}

// constraintIsMap reports a constraint whose type set holds only maps.
func constraintIsMap(constraint types.Type) bool {
	constraintInterface, isInterface := constraint.Underlying().(*types.Interface)
	if !isInterface || constraintInterface.NumEmbeddeds() == 0 {
		return false
	}
	for i := range constraintInterface.NumEmbeddeds() {
		if !termsAreMaps(constraintInterface.EmbeddedType(i)) {
			return false
		}
	}
	return true
}

// termsAreMaps reports an embedded constraint element made only of maps.
func termsAreMaps(element types.Type) bool {
	union, isUnion := element.(*types.Union)
	if !isUnion {
		return isMapType(element)
	}
	for i := range union.Len() {
		if !isMapType(union.Term(i).Type()) {
			return false
		}
	}
	return true
}

// isUnorderedIterator reports a reference to maps.Keys, maps.Values or
// maps.All, however the maps package was imported.
func isUnorderedIterator(info *types.Info, function ast.Expr) bool {
	var ident *ast.Ident
	switch function := ast.Unparen(function).(type) {
	case *ast.Ident:
		ident = function
	case *ast.SelectorExpr:
		ident = function.Sel
	case *ast.IndexExpr: // an explicit instantiation, maps.Keys[map[K]V]
		return isUnorderedIterator(info, function.X)
	case *ast.IndexListExpr:
		return isUnorderedIterator(info, function.X)
	default:
		return false
	}
	object, isFunction := info.Uses[ident].(*types.Func)
	return isFunction && object.Pkg() != nil && object.Pkg().Path() == "maps" && unorderedIterators[object.Name()]
}
