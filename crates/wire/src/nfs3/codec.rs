//! The field codec NFSv3 (and MOUNT, NFSACL, NFSv4) types are declared with: [`Wire`] for
//! fields, the `xdr_struct!`, `xdr_enum!` and `bounded_bytes!` macros, and the serde helpers.

use super::*;

/// Field-level codec used by the struct macro: like [`Xdr`] but also for primitive fields, and
/// told the field name so errors can say where they happened.
pub(crate) trait Wire: Sized {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self>;
    fn put(&self, w: &mut Writer);
}

impl Wire for u32 {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.u32(field)
    }
    fn put(&self, w: &mut Writer) {
        w.u32(*self);
    }
}

impl Wire for u64 {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.u64(field)
    }
    fn put(&self, w: &mut Writer) {
        w.u64(*self);
    }
}

impl Wire for bool {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.bool(field)
    }
    fn put(&self, w: &mut Writer) {
        w.bool(*self);
    }
}

/// The 8-byte verifiers of RFC 1813 §2.5 (cookieverf3, createverf3, writeverf3).
impl Wire for [u8; 8] {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        let mut out = [0u8; 8];
        out.copy_from_slice(r.opaque_fixed(8, field)?);
        Ok(out)
    }
    fn put(&self, w: &mut Writer) {
        w.opaque_fixed(self);
    }
}

/// XDR optional data (`T *` / a boolean-discriminated union with a void arm).
impl<T: Wire> Wire for Option<T> {
    fn get(r: &mut Reader<'_>, field: &'static str) -> Result<Self> {
        r.optional(field, |r| T::get(r, field))
    }
    fn put(&self, w: &mut Writer) {
        w.optional(self.as_ref(), |w, v| v.put(w));
    }
}

impl<T: Xdr> Wire for T {
    fn get(r: &mut Reader<'_>, _field: &'static str) -> Result<Self> {
        T::decode(r)
    }
    fn put(&self, w: &mut Writer) {
        self.encode(w);
    }
}

/// Declare a struct whose XDR encoding is its fields in order, with [`Xdr`] implemented.
macro_rules! xdr_struct {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
        $vis struct $name { $($(#[$fmeta])* pub $field: $ty),* }

        impl $crate::xdr::Xdr for $name {
            fn decode(r: &mut $crate::xdr::Reader<'_>) -> $crate::error::Result<Self> {
                Ok($name {
                    $($field: <$ty as $crate::nfs3::Wire>::get(
                        r,
                        concat!(stringify!($name), ".", stringify!($field)),
                    )?),*
                })
            }
            #[allow(unused_variables)]
            fn encode(&self, w: &mut $crate::xdr::Writer) {
                $($crate::nfs3::Wire::put(&self.$field, w);)*
            }
        }
    };
}
pub(crate) use xdr_struct;

/// Declare a C-like XDR enum: `from_u32`, `name` (the RFC's spelling), [`Xdr`] that rejects
/// values outside the definition, and serialisation as the name.
macro_rules! xdr_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident ($rule:literal) {
        $($variant:ident = $value:literal => $text:literal),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($variant = $value),* }

        impl $name {
            /// Every value, in definition order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value for a wire number, if it is defined.
            pub fn from_u32(value: u32) -> Option<Self> {
                match value {
                    $($value => Some($name::$variant),)*
                    _ => None,
                }
            }

            /// The name as the specification spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }
        }

        impl $name {
            /// [`Self::from_u32`], with an undefined value as a typed error naming the rule.
            pub fn decode_u32(value: u32) -> $crate::error::Result<Self> {
                $name::from_u32(value).ok_or($crate::error::DecodeError::BadDiscriminant {
                    field: stringify!($name),
                    value,
                    rule: $rule,
                })
            }
        }

        impl $crate::xdr::Xdr for $name {
            fn decode(r: &mut $crate::xdr::Reader<'_>) -> $crate::error::Result<Self> {
                $name::decode_u32(r.u32(stringify!($name))?)
            }
            fn encode(&self, w: &mut $crate::xdr::Writer) {
                w.u32(*self as u32);
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}
pub(crate) use xdr_enum;

/// Serialise raw XDR string bytes as (lossy) UTF-8 text, for summaries.
pub fn serialize_bytes_as_text<S: Serializer>(
    bytes: &[u8],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(bytes))
}

/// Serialise an 8-byte verifier as hex.
pub(crate) fn serialize_verifier<S: Serializer>(
    v: &[u8; 8],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::hex::encode(v))
}

/// A variable-length byte string with a decoder limit; `$rule` names where the limit comes from.
macro_rules! bounded_bytes {
    ($(#[$meta:meta])* $name:ident, $max:expr, $rule:literal, $ser:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub Vec<u8>);

        impl $crate::xdr::Xdr for $name {
            fn decode(r: &mut $crate::xdr::Reader<'_>) -> $crate::error::Result<Self> {
                let len = r.bounded_length($max, stringify!($name), $rule)?;
                Ok($name(r.opaque_fixed(len as usize, stringify!($name))?.to_vec()))
            }
            fn encode(&self, w: &mut $crate::xdr::Writer) {
                w.opaque_var(&self.0);
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                $ser(&self.0, s)
            }
        }

        impl From<&[u8]> for $name {
            fn from(bytes: &[u8]) -> Self {
                $name(bytes.to_vec())
            }
        }
    };
}
pub(crate) use bounded_bytes;

pub(crate) fn serialize_hex<S: Serializer>(
    bytes: &[u8],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::hex::encode(bytes))
}
