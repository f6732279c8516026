//! The small expression language of conditions and counts (`!at_rest`,
//! `count > 0 && flag`), compiled to postfix code over integer slots.

/// One postfix instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Const(i64),
    Slot(u16),
    /// The bytes (false) or bits (true) left in the datagram after this point.
    Remaining(bool),
    Not,
    Neg,
    BitNot,
    Bin(BinOp),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    BitAnd,
    BitXor,
    BitOr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    fn precedence(self) -> u8 {
        use BinOp::*;
        match self {
            Mul | Div | Rem => 10,
            Add | Sub => 9,
            Shl | Shr => 8,
            Lt | Le | Gt | Ge => 7,
            Eq | Ne => 6,
            BitAnd => 5,
            BitXor => 4,
            BitOr => 3,
            And => 2,
            Or => 1,
        }
    }

    /// `None` for a division or remainder by zero.
    #[inline]
    fn apply(self, a: i64, b: i64) -> Option<i64> {
        use BinOp::*;
        Some(match self {
            Mul => a.wrapping_mul(b),
            // i64::MIN / -1 wraps like the other operators; only zero is an error.
            Div if b == 0 => return None,
            Rem if b == 0 => return None,
            Div => a.wrapping_div(b),
            Rem => a.wrapping_rem(b),
            Add => a.wrapping_add(b),
            Sub => a.wrapping_sub(b),
            Shl => {
                if (0..64).contains(&b) {
                    a.wrapping_shl(b as u32)
                } else {
                    0
                }
            }
            Shr => a >> b.clamp(0, 63),
            BitAnd => a & b,
            BitXor => a ^ b,
            BitOr => a | b,
            Lt => (a < b) as i64,
            Le => (a <= b) as i64,
            Gt => (a > b) as i64,
            Ge => (a >= b) as i64,
            Eq => (a == b) as i64,
            Ne => (a != b) as i64,
            And => (a != 0 && b != 0) as i64,
            Or => (a != 0 || b != 0) as i64,
        })
    }
}

/// Deepest evaluation stack an expression may need.
pub const MAX_STACK: usize = 32;

/// A syntax or name error at a byte offset inside the expression text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub offset: usize,
    pub len: usize,
    pub message: String,
    pub help: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
}

fn lex(src: &str) -> Result<Vec<(Tok, usize, usize)>, ExprError> {
    const OPS: [&str; 22] = [
        "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "<", ">", "+", "-", "*", "/", "%", "!", "~", "&",
        "|", "^", "=", ".",
    ];
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let text: String = src[start..i].chars().filter(|c| *c != '_').collect();
            let v = if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                i64::from_str_radix(h, 16)
            } else {
                text.parse()
            };
            let v = v.map_err(|_| ExprError {
                offset: start,
                len: i - start,
                message: format!("`{}` is not a number", &src[start..i]),
                help: Some("write decimal or 0x-prefixed hexadecimal integers".into()),
            })?;
            out.push((Tok::Num(v), start, i - start));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), start, i - start));
        } else if c == b'(' {
            out.push((Tok::LParen, i, 1));
            i += 1;
        } else if c == b')' {
            out.push((Tok::RParen, i, 1));
            i += 1;
        } else if let Some(op) = OPS.iter().find(|op| src[i..].starts_with(**op)) {
            if *op == "=" || *op == "." {
                return Err(ExprError {
                    offset: i,
                    len: 1,
                    message: format!("unexpected `{op}`"),
                    help: Some(if *op == "=" {
                        "compare with `==`".into()
                    } else {
                        "refer to a field by its own name; paths are not supported in expressions".into()
                    }),
                });
            }
            out.push((Tok::Op(op), i, op.len()));
            i += op.len();
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(ExprError {
                offset: i,
                len: ch.len_utf8(),
                message: format!("unexpected character `{ch}`"),
                help: None,
            });
        }
    }
    Ok(out)
}

fn binop(s: &str) -> Option<BinOp> {
    use BinOp::*;
    Some(match s {
        "*" => Mul,
        "/" => Div,
        "%" => Rem,
        "+" => Add,
        "-" => Sub,
        "<<" => Shl,
        ">>" => Shr,
        "&" => BitAnd,
        "^" => BitXor,
        "|" => BitOr,
        "<" => Lt,
        "<=" => Le,
        ">" => Gt,
        ">=" => Ge,
        "==" => Eq,
        "!=" => Ne,
        "&&" => And,
        "||" => Or,
        _ => return None,
    })
}

struct Parser<'a, F> {
    toks: Vec<(Tok, usize, usize)>,
    pos: usize,
    end: usize,
    out: Vec<Op>,
    resolve: &'a mut F,
    /// Nesting of parentheses and unary operators, bounded so that a hostile definition
    /// cannot exhaust the stack.
    depth: u32,
}

/// Deepest nesting of parentheses and unary operators in one expression.
pub const MAX_NESTING: u32 = 64;

impl<F: FnMut(&str) -> Result<Op, (String, String)>> Parser<'_, F> {
    fn peek(&self) -> Option<&(Tok, usize, usize)> {
        self.toks.get(self.pos)
    }

    fn err_here(&self, message: String) -> ExprError {
        let (offset, len) = self.peek().map(|t| (t.1, t.2)).unwrap_or((self.end, 0));
        ExprError {
            offset,
            len,
            message,
            help: None,
        }
    }

    fn primary(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.err_here(format!("expression nests more than {MAX_NESTING} levels deep")));
        }
        let r = self.primary_inner();
        self.depth -= 1;
        r
    }

    fn primary_inner(&mut self) -> Result<(), ExprError> {
        let Some((tok, off, len)) = self.peek().cloned() else {
            return Err(self.err_here("expression ends where a value was expected".into()));
        };
        self.pos += 1;
        match tok {
            Tok::Num(v) => self.out.push(Op::Const(v)),
            Tok::Ident(name) => match name.as_str() {
                "true" => self.out.push(Op::Const(1)),
                "false" => self.out.push(Op::Const(0)),
                _ => {
                    let op = (self.resolve)(&name).map_err(|(message, help)| ExprError {
                        offset: off,
                        len,
                        message,
                        help: Some(help),
                    })?;
                    self.out.push(op);
                }
            },
            Tok::LParen => {
                self.expr(0)?;
                match self.peek() {
                    Some((Tok::RParen, ..)) => self.pos += 1,
                    _ => return Err(self.err_here("expected `)`".into())),
                }
            }
            Tok::Op(op @ ("!" | "-" | "~")) => {
                self.primary()?;
                self.out.push(match op {
                    "!" => Op::Not,
                    "-" => Op::Neg,
                    _ => Op::BitNot,
                });
            }
            _ => {
                self.pos -= 1;
                return Err(self.err_here("expected a number, a field name or `(`".into()));
            }
        }
        Ok(())
    }

    fn expr(&mut self, min_prec: u8) -> Result<(), ExprError> {
        self.primary()?;
        while let Some((Tok::Op(op), ..)) = self.peek() {
            let Some(b) = binop(op) else { break };
            let p = b.precedence();
            if p < min_prec {
                break;
            }
            self.pos += 1;
            self.expr(p + 1)?;
            self.out.push(Op::Bin(b));
        }
        Ok(())
    }
}

/// Compiles `src`; `resolve` maps a field name to its slot (or explains why not).
pub fn compile(
    src: &str,
    resolve: &mut impl FnMut(&str) -> Result<Op, (String, String)>,
) -> Result<Vec<Op>, ExprError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end: src.len(),
        out: Vec::new(),
        resolve,
        depth: 0,
    };
    p.expr(0)?;
    if p.pos < p.toks.len() {
        return Err(p.err_here("unexpected text after the expression".into()));
    }
    let mut depth = 0usize;
    let mut max_depth = 0usize;
    for op in &p.out {
        match op {
            Op::Const(_) | Op::Slot(_) | Op::Remaining(_) => depth += 1,
            Op::Bin(_) => depth -= 1,
            _ => {}
        }
        max_depth = max_depth.max(depth);
    }
    if max_depth > MAX_STACK {
        return Err(ExprError {
            offset: 0,
            len: src.len(),
            message: format!(
                "expression nests too deeply (needs {max_depth} stack slots, limit {MAX_STACK})"
            ),
            help: Some("split it with parentheses removed or simplify".into()),
        });
    }
    Ok(p.out)
}

/// Whether `code` divides (or takes a remainder) by a constant zero: its value is then
/// an error for every packet, which the compiler refuses.
pub fn divides_by_zero(code: &[Op]) -> bool {
    // Each value is known (a constant) or not (it reads a field).
    let mut stack: Vec<Option<i64>> = Vec::new();
    for op in code {
        match *op {
            Op::Const(v) => stack.push(Some(v)),
            Op::Slot(_) | Op::Remaining(_) => stack.push(None),
            Op::Not | Op::Neg | Op::BitNot => {
                let v = stack.pop().flatten();
                stack.push(v.map(|v| match op {
                    Op::Not => (v == 0) as i64,
                    Op::Neg => v.wrapping_neg(),
                    _ => !v,
                }));
            }
            Op::Bin(b) => {
                let (r, l) = (stack.pop().flatten(), stack.pop().flatten());
                if matches!(b, BinOp::Div | BinOp::Rem) && r == Some(0) {
                    return true;
                }
                stack.push(l.zip(r).and_then(|(l, r)| b.apply(l, r)));
            }
        }
    }
    false
}

/// Division or remainder by zero while evaluating an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DivisionByZero;

/// Evaluates compiled code; never panics (the compiler bounded the stack depth). A
/// division by zero is an error, not a value.
#[inline]
pub fn eval(code: &[Op], slots: &[i64]) -> Result<i64, DivisionByZero> {
    eval_remaining(code, slots, 0)
}

/// [`eval`] where `remaining` and `remaining_bits` read `bits_left` (the validation
/// plan, which knows no position, never runs code that reads them).
#[inline(always)]
pub fn eval_remaining(code: &[Op], slots: &[i64], bits_left: u64) -> Result<i64, DivisionByZero> {
    let mut stack = [0i64; MAX_STACK];
    let mut sp = 0usize;
    for op in code {
        match *op {
            Op::Const(_) | Op::Slot(_) | Op::Remaining(_) if sp >= MAX_STACK => return Ok(0),
            Op::Remaining(bits) => {
                stack[sp] = if bits {
                    bits_left as i64
                } else {
                    (bits_left / 8) as i64
                };
                sp += 1;
            }
            Op::Const(v) => {
                stack[sp] = v;
                sp += 1;
            }
            Op::Slot(s) => {
                stack[sp] = slots.get(s as usize).copied().unwrap_or(0);
                sp += 1;
            }
            Op::Not | Op::Neg | Op::BitNot if sp == 0 => return Ok(0),
            Op::Not => stack[sp - 1] = (stack[sp - 1] == 0) as i64,
            Op::Neg => stack[sp - 1] = stack[sp - 1].wrapping_neg(),
            Op::BitNot => stack[sp - 1] = !stack[sp - 1],
            Op::Bin(_) if sp < 2 => return Ok(0),
            Op::Bin(b) => {
                sp -= 1;
                stack[sp - 1] = b.apply(stack[sp - 1], stack[sp]).ok_or(DivisionByZero)?;
            }
        }
    }
    Ok(if sp == 0 { 0 } else { stack[sp - 1] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str, vars: &[(&str, i64)]) -> Result<i64, ExprError> {
        let names: Vec<&str> = vars.iter().map(|v| v.0).collect();
        let slots: Vec<i64> = vars.iter().map(|v| v.1).collect();
        let code = compile(src, &mut |n| {
            names
                .iter()
                .position(|x| *x == n)
                .map(|i| Op::Slot(i as u16))
                .ok_or_else(|| (format!("unknown field `{n}`"), "no such".to_string()))
        })?;
        Ok(eval(&code, &slots).expect("no division by zero here"))
    }

    /// Regression: `n / 0` evaluated to 0 and the packet read on as if it were valid.
    #[test]
    fn division_by_zero_is_an_error() {
        let code = compile("x / y + 1", &mut |n| Ok(Op::Slot(if n == "x" { 0 } else { 1 }))).unwrap();
        assert_eq!(eval(&code, &[4, 0]), Err(DivisionByZero));
        assert_eq!(eval(&code, &[4, 2]), Ok(3));
        let code = compile("x % y", &mut |n| Ok(Op::Slot(if n == "x" { 0 } else { 1 }))).unwrap();
        assert_eq!(eval(&code, &[4, 0]), Err(DivisionByZero));
        assert_eq!(eval(&code, &[i64::MIN, -1]), Ok(0));
    }

    #[test]
    fn precedence_and_logic() {
        assert_eq!(run("1 + 2 * 3", &[]).unwrap(), 7);
        assert_eq!(run("(1 + 2) * 3", &[]).unwrap(), 9);
        assert_eq!(run("!at_rest", &[("at_rest", 0)]).unwrap(), 1);
        assert_eq!(run("count > 0 && flag", &[("count", 3), ("flag", 1)]).unwrap(), 1);
        assert_eq!(run("count > 0 && flag", &[("count", 0), ("flag", 1)]).unwrap(), 0);
        assert_eq!(run("a == 1 || b == 2", &[("a", 0), ("b", 2)]).unwrap(), 1);
        assert_eq!(run("n * 8 - 1", &[("n", 4)]).unwrap(), 31);
        assert_eq!(run("1 << 70", &[]).unwrap(), 0);
        assert_eq!(run("-3 + 0x10", &[]).unwrap(), 13);
    }

    #[test]
    fn errors_point_into_the_text() {
        let e = run("count > 0 && flga", &[("count", 1), ("flag", 1)]).unwrap_err();
        assert_eq!((e.offset, e.len), (13, 4));
        assert_eq!(e.message, "unknown field `flga`");
        let e = run("a = 1", &[("a", 1)]).unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(run("(1 + 2", &[]).is_err());
        assert!(run("1 2", &[]).is_err());
        assert!(run("", &[]).is_err());
        assert!(run("$", &[]).is_err());
        // Hostile nesting is refused, not a stack overflow.
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(run(&deep, &[]).unwrap_err().message.contains("nests more than"));
        assert!(run(&"!".repeat(100_000), &[]).is_err());
    }
}
