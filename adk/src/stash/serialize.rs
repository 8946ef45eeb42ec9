//! Turning a caller's `Serialize` value into JSON without ever nesting past [`MAX_DEPTH`].
//!
//! `serde_json::to_value` recurses once per level of the value. A deeply nested value (a long
//! linked list, a `Value` built in a loop) would overflow the stack inside it before the stash
//! could refuse it, so the conversion runs through [`Bounded`], a serializer wrapper that
//! counts levels as it goes and stops at the limit.

use std::cell::Cell;

use serde::ser::{self, Error as _, Serialize, Serializer};
use serde_json::Value;

use super::MAX_DEPTH;

/// Why a value could not be turned into stash JSON.
#[derive(Debug)]
pub(crate) enum SerializeProblem {
    /// It nests past [`MAX_DEPTH`] below its path.
    TooDeep,
    /// serde_json refused it, for example a map with non-string keys.
    Failed(serde_json::Error),
}

/// Converts `value`, which will sit `levels_above` levels below the root, to JSON.
pub(crate) fn to_bounded_value<T: Serialize + ?Sized>(
    value: &T,
    levels_above: usize,
) -> Result<Value, SerializeProblem> {
    let too_deep = Cell::new(false);
    let guarded = Guarded {
        value,
        level: levels_above,
        too_deep: &too_deep,
    };
    guarded
        .serialize(serde_json::value::Serializer)
        .map_err(|error| {
            if too_deep.get() {
                SerializeProblem::TooDeep
            } else {
                SerializeProblem::Failed(error)
            }
        })
}

/// A value to serialize at `level` (how many containers enclose it, the path's included).
struct Guarded<'a, T: ?Sized> {
    value: &'a T,
    level: usize,
    // Set when the limit stops serialization, to tell that apart from the error text alone.
    too_deep: &'a Cell<bool>,
}

impl<T: Serialize + ?Sized> Serialize for Guarded<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Bounded {
            inner: serializer,
            level: self.level,
            too_deep: self.too_deep,
        })
    }
}

/// Forwards to `inner`, refusing any container that would sit past the limit and wrapping
/// every nested value in a [`Guarded`] one level further down.
struct Bounded<'a, S> {
    inner: S,
    level: usize,
    too_deep: &'a Cell<bool>,
}

impl<'a, S: Serializer> Bounded<'a, S> {
    /// The level of the children of a container that adds `added` JSON levels (2 for an enum
    /// variant holding a sequence or struct: `{"Variant": [...]}`).
    fn open(&self, added: usize) -> Result<usize, S::Error> {
        let innermost = self.level + added;
        if innermost > MAX_DEPTH {
            self.too_deep.set(true);
            return Err(S::Error::custom(format_args!(
                "value nests past the stash's limit of {MAX_DEPTH} levels"
            )));
        }
        Ok(innermost)
    }

    fn same_level<'v, T: ?Sized>(&self, value: &'v T) -> Guarded<'v, T>
    where
        'a: 'v,
    {
        Guarded {
            value,
            level: self.level,
            too_deep: self.too_deep,
        }
    }
}

macro_rules! forward_scalars {
    ($($method:ident($type:ty)),* $(,)?) => {
        $(
            fn $method(self, value: $type) -> Result<S::Ok, S::Error> {
                self.inner.$method(value)
            }
        )*
    };
}

impl<'a, S: Serializer> Serializer for Bounded<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'a, S::SerializeSeq>;
    type SerializeTuple = Compound<'a, S::SerializeTuple>;
    type SerializeTupleStruct = Compound<'a, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'a, S::SerializeTupleVariant>;
    type SerializeMap = Compound<'a, S::SerializeMap>;
    type SerializeStruct = Compound<'a, S::SerializeStruct>;
    type SerializeStructVariant = Compound<'a, S::SerializeStructVariant>;

    forward_scalars! {
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let guarded = self.same_level(value);
        self.inner.serialize_some(&guarded)
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit()
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_struct(name)
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.inner
            .serialize_unit_variant(name, variant_index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let guarded = self.same_level(value);
        self.inner.serialize_newtype_struct(name, &guarded)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let level = self.open(1)?;
        let guarded = Guarded {
            value,
            level,
            too_deep: self.too_deep,
        };
        self.inner
            .serialize_newtype_variant(name, variant_index, variant, &guarded)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let level = self.open(1)?;
        let inner = self.inner.serialize_seq(len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep: self.too_deep,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let level = self.open(1)?;
        let too_deep = self.too_deep;
        let inner = self.inner.serialize_tuple(len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep,
        })
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let level = self.open(1)?;
        let too_deep = self.too_deep;
        let inner = self.inner.serialize_tuple_struct(name, len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep,
        })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        let level = self.open(2)?;
        let too_deep = self.too_deep;
        let inner = self
            .inner
            .serialize_tuple_variant(name, variant_index, variant, len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep,
        })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let level = self.open(1)?;
        let too_deep = self.too_deep;
        let inner = self.inner.serialize_map(len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep,
        })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        let level = self.open(1)?;
        let too_deep = self.too_deep;
        let inner = self.inner.serialize_struct(name, len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep,
        })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let level = self.open(2)?;
        let too_deep = self.too_deep;
        let inner = self
            .inner
            .serialize_struct_variant(name, variant_index, variant, len)?;
        Ok(Compound {
            inner,
            child_level: level,
            too_deep,
        })
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// An open container of the inner serializer; its elements are serialized one level down.
struct Compound<'a, C> {
    inner: C,
    child_level: usize,
    too_deep: &'a Cell<bool>,
}

impl<C: ser::SerializeSeq> ser::SerializeSeq for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_element(&child)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeTuple> ser::SerializeTuple for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_element(&child)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeTupleStruct> ser::SerializeTupleStruct for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_field(&child)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeTupleVariant> ser::SerializeTupleVariant for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_field(&child)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeMap> ser::SerializeMap for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), C::Error> {
        let child = Guarded {
            value: key,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_key(&child)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_value(&child)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeStruct> ser::SerializeStruct for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_field(key, &child)
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeStructVariant> ser::SerializeStructVariant for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        let child = Guarded {
            value,
            level: self.child_level,
            too_deep: self.too_deep,
        };
        self.inner.serialize_field(key, &child)
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[derive(serde::Serialize)]
    struct Node {
        label: String,
        next: Option<Box<Node>>,
    }

    fn chain(length: usize) -> Node {
        let mut node = Node {
            label: "last".to_owned(),
            next: None,
        };
        for _ in 1..length {
            node = Node {
                label: "link".to_owned(),
                next: Some(Box::new(node)),
            };
        }
        node
    }

    #[test]
    fn produces_the_same_json_as_serde_json() {
        #[derive(serde::Serialize)]
        enum Shape {
            Point,
            Circle(f64),
            Pair(u8, u8),
            Rect { width: u32, height: u32 },
        }
        let value = (
            vec![Shape::Point, Shape::Circle(1.5), Shape::Pair(1, 2)],
            Shape::Rect {
                width: 3,
                height: 4,
            },
            BTreeMap::from([("k", Some("v"))]),
            chain(3),
        );
        let bounded = to_bounded_value(&value, 1).expect("shallow value");
        assert_eq!(bounded, serde_json::to_value(&value).expect("serializable"));
    }

    #[test]
    fn counts_levels_including_those_above() {
        // `chain(n)` nests n objects.
        assert!(to_bounded_value(&chain(MAX_DEPTH - 3), 3).is_ok());
        assert!(matches!(
            to_bounded_value(&chain(MAX_DEPTH - 2), 3),
            Err(SerializeProblem::TooDeep)
        ));
    }

    #[test]
    fn enum_variants_holding_containers_count_two_levels() {
        #[derive(serde::Serialize)]
        enum Wrapper {
            Items(Vec<u8>, Vec<u8>),
        }
        let value = Wrapper::Items(vec![1], vec![2]);
        assert_eq!(
            to_bounded_value(&value, MAX_DEPTH - 3).expect("fits"),
            json!({"Items": [[1], [2]]})
        );
        assert!(to_bounded_value(&value, MAX_DEPTH - 2).is_err());
    }

    #[test]
    fn a_hundred_thousand_levels_stop_at_the_limit_without_overflowing() {
        let deep = chain(100_000);
        assert!(matches!(
            to_bounded_value(&deep, 1),
            Err(SerializeProblem::TooDeep)
        ));
        // `Node`'s own drop recurses once per link; take the chain apart iteratively.
        let mut next = deep.next;
        while let Some(mut node) = next {
            next = node.next.take();
        }
    }

    #[test]
    fn other_failures_are_reported_as_serialization_errors() {
        let map = BTreeMap::from([((1, 2), "tuple keys are not JSON")]);
        assert!(matches!(
            to_bounded_value(&map, 1),
            Err(SerializeProblem::Failed(_))
        ));
    }
}
